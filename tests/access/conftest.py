"""Fixtures of the access suite: a migrated SQLite control-plane database with two tenants, and skips
where OpenSSH or BIRD are not installed (scripts/apt-packages.txt installs them)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import orm

from velyrix.controlplane.db import engine, migrate, models
from velyrix.controlplane.db.models import identity

_n = itertools.count()


@dataclass
class Tenant:
    tenant_id: str
    owner_id: str
    member_id: str
    cluster_id: str


@dataclass
class World:
    url: str
    sessionmaker: orm.sessionmaker[orm.Session]
    a: Tenant
    b: Tenant


def _tenant(session: orm.Session, name: str, mode: str) -> Tenant:
    tenant = models.Tenant(name=name)
    session.add(tenant)
    session.flush()
    owner = identity.User(tenant_id=tenant.id, user_name=f"owner@{name}.example", role="owner")
    member = identity.User(tenant_id=tenant.id, user_name=f"member@{name}.example", role="member")
    cluster = models.Cluster(
        tenant_id=tenant.id,
        name=f"{name}-train",
        region="us-east-1",
        node_type="hgx-h200-8g",
        node_count=1,
        spec={"name": f"{name}-train", "operating_mode": mode},
        plan={},
    )
    session.add_all([owner, member, cluster])
    session.flush()
    return Tenant(tenant.id, owner.id, member.id, cluster.id)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    url = f"sqlite:///{tmp_path / f'access{next(_n)}.db'}"
    migrate.upgrade(url)
    eng = engine.make_engine(url)
    maker = orm.sessionmaker(eng, expire_on_commit=False)
    with maker() as s:
        a = _tenant(s, "acme", "self_operated")
        b = _tenant(s, "globex", "managed")
        s.commit()
    yield World(url, maker, a, b)
    eng.dispose()


def wait_for_events(
    maker: orm.sessionmaker[orm.Session], action: str, count: int = 1, timeout_s: float = 30.0
) -> list[models.AuditEvent]:
    """The audit events of ``action`` once there are ``count`` of them: the jump host records a session's
    close after the client has seen the session end, so a test polls for it."""
    import time

    import sqlalchemy as sa

    deadline = time.monotonic() + timeout_s
    while True:
        with maker() as s:
            found = list(s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.action == action)))
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)
