"""Fixtures of the control-plane suite: every module runs against SQLite AND a real PostgreSQL
(started once per session from the machine's binaries by ``velyrix.testing.postgres``), each module
on a fresh database. An autouse fixture checks that every mutation request a test made left exactly
one audit event."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import cluster_rows
from velyrix.testing import postgres

_counter = itertools.count()
MUTATING = {"POST", "PUT", "PATCH", "DELETE"}


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_counter)}"


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    name = f"m{next(_counter)}"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('db') / (name + '.db')}"
    server: postgres.PostgresServer = request.getfixturevalue("pg_server")
    return server.create_database(name)


class Recorder:
    """ASGI wrapper remembering (method, path, status, request id) of every request to the app."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.calls: list[tuple[str, str, int, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def spy(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                rid = dict(message.get("headers", [])).get(b"x-request-id", b"").decode()
                self.calls.append((scope["method"], scope["path"], message["status"], rid))
            await send(message)

        await self.app(scope, receive, spy)


FLEET = {("us-east-1", "hgx-h200-8g"): 512, ("us-east-1", "hgx-h100-8g"): 64, ("eu-west-1", "hgx-h200-8g"): 32}
"""The fleet the API tests' control plane sells from: capacity comes from the node table, not the catalog."""


def enroll_fleet(sessionmaker: Any) -> None:
    """Production nodes, free, for ``FLEET`` (what the intake leaves behind on a real or twin fleet)."""
    from velyrix.controlplane.db import models

    with sessionmaker() as s:
        for (region, node_type), count in FLEET.items():
            tag = f"{region}-{node_type}"
            s.add_all(
                models.Node(
                    name=f"fleet-{tag}-{i:04d}",
                    region=region,
                    node_type=node_type,
                    provisioning_state="available",
                    fleet_stage="production",
                    hardware={},
                    labels={},
                )
                for i in range(count)
            )
        s.commit()


@pytest.fixture(scope="module")
def app(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorder]:
    from velyrix.ops.service import create_app

    with pytest.MonkeyPatch.context() as mp:  # region signing keys of the acceptance routes: not in ~/.velyrix
        mp.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path_factory.mktemp("keys")))
        application = create_app(db_url)
        enroll_fleet(application.state.sessionmaker)
        yield Recorder(application)
        application.state.engine.dispose()


@pytest.fixture(autouse=True)
def every_mutation_audited_once(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test: every POST/PUT/PATCH/DELETE it sent left exactly one audit event."""
    if "app" not in request.fixturenames:
        yield
        return
    recorder: Recorder = request.getfixturevalue("app")
    start = len(recorder.calls)
    yield
    assert_each_mutation_audited_once(recorder, start)


def assert_each_mutation_audited_once(recorder: Recorder, start: int = 0) -> None:
    """Every POST/PUT/PATCH/DELETE the recorder saw after call ``start`` has exactly one audit event."""
    mutations = [c for c in recorder.calls[start:] if c[0] in MUTATING]
    if not mutations:
        return
    import sqlalchemy as sa

    from velyrix.controlplane.db import models

    ids = [c[3] for c in mutations]
    assert all(ids), "a mutation response lacked its X-Request-ID"
    counts: dict[str, int] = {}
    with recorder.app.state.sessionmaker() as s:
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            stmt = (
                sa.select(models.AuditEvent.request_id, sa.func.count())
                .where(models.AuditEvent.request_id.in_(chunk))
                .group_by(models.AuditEvent.request_id)
            )
            counts.update({rid: n for rid, n in s.execute(stmt)})
    wrong = [(m, p, st, counts.get(rid, 0)) for m, p, st, rid in mutations if counts.get(rid, 0) != 1]
    assert not wrong, f"mutations without exactly one audit event (method, path, status, events): {wrong[:10]}"


@pytest.fixture(scope="module")
def client(app: Recorder) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    with TestClient(app, raise_server_exceptions=True) as c:
        yield c


@dataclass
class TenantWorld:
    """One tenant with a key per role."""

    tenant_id: str
    name: str
    keys: dict[str, str] = field(default_factory=dict)
    key_ids: dict[str, str] = field(default_factory=dict)


@dataclass
class World:
    """Two tenants (a, b) with a key per role each, provider keys, and broken keys."""

    app: Recorder
    a: TenantWorld
    b: TenantWorld
    provider: dict[str, str]
    provider_key_ids: dict[str, str]
    revoked: str
    expired: str

    def session(self) -> Any:
        return self.app.app.state.sessionmaker()

    def key(self, tenant: TenantWorld | None, role: str, **kw: Any) -> tuple[str, str]:
        """A new key (id, secret) straight in the database."""
        from velyrix.controlplane.auth import principals

        with self.session() as s:
            row, secret = principals.issue_key(
                s, tenant_id=tenant.tenant_id if tenant else None, name=unique("key"), role=role, **kw
            )
            s.commit()
            return row.id, secret

    def cluster(self, tenant: TenantWorld, node_count: int = 1, region: str = "us-east-1") -> str:
        """A new cluster of ``tenant`` straight in the database; returns its id."""
        from velyrix.controlplane import specs

        body = specs.ClusterSpecBody(**cluster_body(unique("c"), node_count=node_count, region=region))
        spec = specs.validate(body)
        with self.session() as s:
            c = cluster_rows.pending_cluster(tenant.tenant_id, spec)
            s.add(c)
            s.commit()
            return c.id

    def volume(self, tenant: TenantWorld) -> str:
        from velyrix.controlplane.db import models

        with self.session() as s:
            v = models.Volume(
                tenant_id=tenant.tenant_id, name=unique("v"), region="us-east-1", tier="parallel_fs", size_tb=10.0
            )
            s.add(v)
            s.commit()
            return v.id

    def node(self, tenant: TenantWorld | None, cluster_id: str | None = None) -> str:
        from velyrix.controlplane.db import models

        with self.session() as s:
            n = models.Node(
                name=unique("gpu"),
                region="us-east-1",
                node_type="hgx-h200-8g",
                tenant_id=tenant.tenant_id if tenant else None,
                cluster_id=cluster_id,
                hardware={"serial": unique("SN")},
            )
            s.add(n)
            s.commit()
            return n.id

    def audit_event(self, tenant: TenantWorld) -> str:
        from velyrix.controlplane import audit

        with self.session() as s:
            info = audit.RequestInfo(request_id=unique("fixture"), source_address=None, method="TEST", path="/")
            e = audit.record(s, info, None, action="fixture.event", target="fixture", tenant_id=tenant.tenant_id)
            s.commit()
            return e.id


def cluster_body(name: str, node_count: int = 1, region: str = "us-east-1") -> dict[str, Any]:
    return {
        "name": name,
        "region": region,
        "node_type": "hgx-h200-8g",
        "node_count": node_count,
        "fabric": "infiniband-ndr",
        "scheduler": "slurm",
        "storage": {"parallel_fs_tb": 100},
    }


TENANT_ROLES = ("owner", "admin", "member", "viewer", "billing")
PROVIDER_ROLES = ("operator", "auditor", "physical-access")


def _tenant(app: Recorder, name: str) -> TenantWorld:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models

    with app.app.state.sessionmaker() as s:
        t = models.Tenant(name=name, display_name=name.upper())
        s.add(t)
        s.flush()
        world = TenantWorld(tenant_id=t.id, name=name)
        for role in TENANT_ROLES:
            row, secret = principals.issue_key(s, tenant_id=t.id, name=f"{name}-{role}", role=role)
            world.keys[role], world.key_ids[role] = secret, row.id
        s.commit()
    return world


@pytest.fixture(scope="module")
def world(app: Recorder) -> World:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models

    a, b = _tenant(app, unique("tenant-a")), _tenant(app, unique("tenant-b"))
    provider, provider_ids = {}, {}
    with app.app.state.sessionmaker() as s:
        for role in PROVIDER_ROLES:
            row, secret = principals.issue_key(s, tenant_id=None, name=f"noc-{role}", role=role)
            provider[role], provider_ids[role] = secret, row.id
        row, revoked = principals.issue_key(s, tenant_id=a.tenant_id, name="revoked", role="owner")
        row.revoked_at = models.utcnow()
        row, expired = principals.issue_key(
            s,
            tenant_id=a.tenant_id,
            name="expired",
            role="owner",
            expires_at=models.utcnow() + dt.timedelta(seconds=60),
        )
        s.flush()
        row.expires_at = models.utcnow() - dt.timedelta(seconds=1)
        s.commit()
    return World(app=app, a=a, b=b, provider=provider, provider_key_ids=provider_ids, revoked=revoked, expired=expired)


def auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def live_url(app: Recorder) -> Iterator[str]:
    """The app served by a real uvicorn on a free loopback port (for concurrent clients)."""
    import threading
    import time

    import uvicorn

    port = postgres.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
