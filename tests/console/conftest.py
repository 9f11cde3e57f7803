"""Fixtures of the console suite: a control plane (``velyrix.ops.service``) on SQLite and on PostgreSQL
(``db_url``), two tenants, and for tenant ``acme`` one signed-in browser session per tenant role; tenant
``beta`` (the foreign tenant) owns a cluster with nodes (positions, GPU reports), an acceptance report
and a key that acme's sessions must never see."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.console import admin_seed
from tests.controlplane.conftest import TENANT_ROLES, db_url  # noqa: F401  (fixture: SQLite and PostgreSQL)

GPUS = 8


@dataclass
class Tenant:
    """A tenant's ids and names; ``sessions``: role -> cookie secret of a user with that role."""

    id: str
    name: str
    cluster_id: str = ""
    cluster_name: str = ""
    key_id: str = ""
    key_name: str = ""
    node_names: list[str] = field(default_factory=list)
    sessions: dict[str, str] = field(default_factory=dict)
    admin: dict[str, str] = field(default_factory=dict)  # ids and names of the admin pages (admin_seed.py)


def hardware(name: str, su: int, slot: int) -> dict[str, Any]:
    """A node's stored inventory position: ``su``/``slot`` and one rail-leaf port per GPU (rail = index)."""
    ports = [{"rail": r, "leaf": f"su{su}-leaf-r{r}", "port": slot + 1} for r in range(GPUS)]
    return {"serial": f"SN-{name}", "position": {"su": su, "slot": slot, "su_nodes": 32, "leaf_ports": ports}}


def sample(name: str, *, xid: int | None = None, dbe: int = 0) -> dict[str, Any]:
    """An agent report's sample with ``GPUS`` GPUs; GPU 3 carries ``xid`` / ``dbe`` when given."""
    gpus = []
    for i in range(GPUS):
        bad = i == 3
        gpus.append(
            {
                "index": i,
                "uuid": f"GPU-{name}-{i}",
                "temperature_c": 41.0 + i,
                "xid_counts": {str(xid): 2} if bad and xid else {},
                "ecc_sbe_volatile": 0,
                "ecc_dbe_volatile": dbe if bad else 0,
            }
        )
    return {"hostname": name, "gpus": gpus}


def _tenant(s: Any, name: str) -> Tenant:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import login

    row = models.Tenant(name=name, display_name=name)
    s.add(row)
    s.flush()
    tenant = Tenant(row.id, name)
    key, _ = principals.issue_key(s, tenant_id=row.id, name=f"{name}-ci-key", role="member")
    tenant.key_id, tenant.key_name = key.id, key.name
    for role in TENANT_ROLES:
        user = User(tenant_id=row.id, user_name=f"{role}@{name}.example", role=role)
        s.add(user)
        s.flush()
        _, secret, _ = login.start_session(s, user, "oidc", mfa=True)  # proved a second factor at login
        tenant.sessions[role] = secret
    return tenant


def _cluster(s: Any, tenant: Tenant, nodes: int) -> None:
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models import health as health_tables

    name = f"{tenant.name}-train"
    cluster = models.Cluster(
        tenant_id=tenant.id,
        name=name,
        region="us-east-1",
        node_type="hgx-h200-8g",
        node_count=nodes,
        spec={},
        plan={},
        phase="Ready",
        conditions=[{"type": "Ready", "status": "True", "reason": "Accepted", "message": "", "last_transition_at": ""}],
        phase_history=[{"phase": "Ready", "from": "Validating", "at": "", "actor": "reconciler", "reason": "ok"}],
        events=[{"at": "", "type": "Normal", "reason": "PhaseReady", "message": f"{name} accepted"}],
    )
    s.add(cluster)
    s.flush()
    tenant.cluster_id, tenant.cluster_name = cluster.id, name
    for i in range(nodes):
        node_name = f"{tenant.name}-gpu-{i:02d}"
        node = models.Node(
            name=node_name,
            region="us-east-1",
            node_type="hgx-h200-8g",
            tenant_id=tenant.id,
            cluster_id=cluster.id,
            provisioning_state="allocated",
            fleet_stage="production",
            hardware=hardware(node_name, su=i // 2, slot=i % 2),
            labels={},
        )
        s.add(node)
        s.flush()
        tenant.node_names.append(node_name)
        level = 3 if i == 1 else 0
        s.add(
            health_tables.NodeReport(
                node_id=node.id,
                tenant_id=tenant.id,
                collected_at_s=1.0,
                up=True,
                problems=[],
                sample=sample(node_name, xid=79 if i == 1 else None, dbe=1 if i == 1 else 0),
                health_level=level,
                health_summary="XID 79 on GPU 3" if level else "",
            )
        )
    report = {"report": {"kind": "acceptance", "cluster": {"id": cluster.id, "name": name}}, "signature": {}}
    s.add(
        models.AcceptanceReport(
            tenant_id=tenant.id, cluster_id=cluster.id, region="us-east-1", passed=True, report=report
        )
    )


@dataclass
class World:
    app: Any
    acme: Tenant
    beta: Tenant


@pytest.fixture(scope="module")
def world(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:  # noqa: F811
    from velyrix.ops.service import create_app

    home: Path = tmp_path_factory.mktemp("console-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_HOME", str(home))
        mp.setenv("VELYRIX_SIGNING_KEY_DIR", str(home / "keys"))
        mp.delenv("VELYRIX_DATABASE_URL", raising=False)
        app = create_app(db_url)
        with app.state.sessionmaker() as s:
            acme, beta = _tenant(s, "acme"), _tenant(s, "beta")
            _cluster(s, acme, 4)
            _cluster(s, beta, 2)
            acme.admin, beta.admin = admin_seed.seed(s, acme), admin_seed.seed(s, beta)
            s.commit()
        yield World(app, acme, beta)
        app.state.engine.dispose()
