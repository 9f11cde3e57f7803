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
    incident_id: str = ""
    invoice_id: str = ""
    invoice_number: str = ""
    credit_note_id: str = ""
    credit_note_number: str = ""
    volume_name: str = ""
    team: str = ""
    node_ids: list[str] = field(default_factory=list)
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
        tenant.node_ids.append(node.id)
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


def incident(s: Any, tenant: Tenant, priority: str = "P1") -> str:
    """A NOC incident of the tenant's cluster opened now (``ops.noc.incidents.open_incident``), its id."""
    from velyrix.fleet import clock
    from velyrix.ops.noc import incidents

    row, _ = incidents.open_incident(
        s,
        key=f"capacity/{tenant.cluster_id}",
        priority=priority,
        title=f"{tenant.cluster_name} lost a node and no spare is left",
        tenant_id=tenant.id,
        cluster_id=tenant.cluster_id,
        source="control-plane",
        at=clock.now(),
    )
    return row.id


def _billing(s: Any, tenant: Tenant) -> None:
    """An invoice, a credit note applied to it, a volume and a job's metered GPU time of ``tenant``, as rows
    for the leak matrix (test_console_billing.py and test_console_jobs.py make them through the billing run
    and the agents' reports instead)."""
    import sqlalchemy as sa

    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models import noc as models_noc
    from velyrix.controlplane.db.models.usage import JobUsage

    number = f"CN-202611-{tenant.name.upper()}"
    note = models_noc.CreditNote(
        tenant_id=tenant.id,
        number=number,
        month="2026-11",
        cluster_id=tenant.cluster_id,
        state="applied",
        amount="10.00",
        remaining="0.00",
        applications=[],
        evidence={"credit_percent": "10"},
    )
    s.add(note)
    s.flush()
    line = {
        "description": "GPU-hours",
        "quantity": "1",
        "unit": "GPU-hour",
        "unit_price_usd": "100.00",
        "amount_usd": "100.00",
    }
    invoice = models_noc.Invoice(
        tenant_id=tenant.id,
        number=f"INV-202612-{tenant.name.upper()}",
        month="2026-12",
        lines=[line],
        credits=[{"credit_note_id": note.id, "number": number, "amount_usd": "10.00"}],
        subtotal="100.00",
        credits_applied="10.00",
        total="90.00",
    )
    s.add(invoice)
    s.flush()
    note.applications = [{"invoice_id": invoice.id, "number": invoice.number, "amount_usd": "10.00"}]
    tenant.invoice_id, tenant.invoice_number = invoice.id, invoice.number
    tenant.credit_note_id, tenant.credit_note_number = note.id, number
    tenant.volume_name = f"{tenant.name}-datasets"
    tenant.team = f"{tenant.name}-team-private"
    node = s.scalars(sa.select(models.Node).where(models.Node.cluster_id == tenant.cluster_id)).first()
    s.add(
        JobUsage(
            tenant_id=tenant.id,
            cluster_id=tenant.cluster_id,
            node_id=node.id,
            hpc_job="77",
            team=tenant.team,
            cost_center=f"{tenant.name}-cc",
            allocated_gpu_s=7200.0,
            busy_gpu_s=3600.0,
            first_s=0.0,
            last_s=900.0,
        )
    )
    s.add(
        models.Volume(
            tenant_id=tenant.id, name=tenant.volume_name, region="us-east-1", tier="parallel_fs", size_tb=80.0
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
            acme.incident_id, beta.incident_id = incident(s, acme), incident(s, beta)
            _billing(s, acme)
            _billing(s, beta)
            acme.admin, beta.admin = admin_seed.seed(s, acme), admin_seed.seed(s, beta)
            s.commit()
        yield World(app, acme, beta)
        app.state.engine.dispose()


def rollout(s: Any, nodes: list[str], *, holds: bool = True) -> str:
    """A rollout of the provider (two waves over ``nodes``: canary, then the rest) running, with wave 0's gate
    judged (``holds``), as ``ops.rollouts.engine`` leaves one mid-way; returns its id."""
    import datetime as dt

    from velyrix.controlplane.db.models import rollouts as models_rollouts

    at = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
    waves = [
        {"index": 0, "stage": "canary", "cluster": None, "nodes": nodes[:1], "window_start": "2026-12-01T12:00:00Z"},
        {"index": 1, "stage": "fleet", "cluster": None, "nodes": nodes[1:], "window_start": "2026-12-01T14:00:00Z"},
    ]
    row = models_rollouts.Rollout(
        name="driver-580",
        region="us-east-1",
        component="gpu-driver",
        version="580.65.06",
        spec={},
        plan={"waves": waves},
        state="running",
        created_by="key:ops (noc-operator)",
        announced_at=at,
    )
    s.add(row)
    s.flush()
    s.add(
        models_rollouts.RolloutStep(
            rollout_id=row.id,
            key=f"w0/upgrade/{nodes[0]}",
            node=nodes[0],
            action="upgrade",
            status="done",
            detail={},
            started_at=at,
        )
    )
    gate = {"holds": holds, "problems": [] if holds else ["gemm 12% below baseline"], "failed": {}}
    s.add(
        models_rollouts.RolloutStep(
            rollout_id=row.id,
            key="w0/validate/gate",
            node=None,
            action="gate",
            status="done",
            detail=gate,
            started_at=at,
        )
    )
    s.flush()
    return str(row.id)
