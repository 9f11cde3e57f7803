"""A small world for reconciler tests: SQLite with the real migrations, a twin region, its driver, helpers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane import db, status
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import phases, tables
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.fleet import states


def body(name: str, node_count: int, **storage: float) -> dict[str, Any]:
    """A cluster spec body as the API stores it."""
    return {
        "name": name,
        "region": "us-east-1",
        "node_type": "hgx-h200-8g",
        "node_count": node_count,
        "fabric": "infiniband-ndr",
        "scheduler": "slurm",
        "address": f"velyrix_cluster.{name.replace('-', '_')}",
        "storage": {"parallel_fs_tb": 100.0, **storage},
        "acceptance": {t: True for t in ("gpu_burn_in", "nvlink", "ib_ports", "local_nvme", "all_reduce", "storage")},
    }


@dataclass
class World:
    engine: sa.Engine
    sessionmaker: orm.sessionmaker[orm.Session]
    runtime: FleetRuntime
    tenant_id: str

    @property
    def sim(self) -> Any:
        return self.runtime.sim

    @property
    def driver(self) -> Any:
        return self.runtime.driver

    def declare(self, name: str, node_count: int, tenant_id: str | None = None, **storage: float) -> str:
        with self.sessionmaker() as s:
            spec = body(name, node_count, **storage)
            c = models.Cluster(
                tenant_id=tenant_id or self.tenant_id,
                name=name,
                region="us-east-1",
                node_type="hgx-h200-8g",
                node_count=node_count,
                spec=spec,
                plan={},
                conditions=[],
                phase_history=[],
                events=[],
            )
            status.set_phase(c, phases.PENDING, actor="test", reason="declared")
            s.add(c)
            s.commit()
            return c.id

    def update(self, cluster_id: str, **changes: Any) -> None:
        with self.sessionmaker() as s:
            c = s.get(models.Cluster, cluster_id)
            assert c is not None
            spec = dict(c.spec)
            spec.update(changes)
            c.spec = spec
            c.node_count = spec["node_count"]
            if changes.get("absent"):
                c.desired_state = "absent"
            s.commit()

    def destroy(self, cluster_id: str, delete_volumes: bool = False) -> None:
        from velyrix.controlplane.reconcile import cluster as cluster_mod

        with self.sessionmaker() as s:
            c = s.get(models.Cluster, cluster_id)
            assert c is not None
            cluster_mod.work_of(s, c).delete_volumes = delete_volumes
            c.desired_state = "absent"
            s.commit()

    def settle(self, timeout_s: float = 30.0, tick: float | None = None) -> None:
        self.runtime.reconciler.settle(timeout_s, tick=tick)

    def cluster(self, cluster_id: str) -> models.Cluster:
        with self.sessionmaker() as s:
            c = s.get(models.Cluster, cluster_id)
            assert c is not None
            return c

    def nodes(self, **where: Any) -> list[models.Node]:
        with self.sessionmaker() as s:
            stmt = sa.select(models.Node)
            for k, v in where.items():
                stmt = stmt.where(getattr(models.Node, k) == v)
            return list(s.scalars(stmt.order_by(models.Node.name)))

    def report(self, cluster_id: str) -> dict[str, Any]:
        with self.sessionmaker() as s:
            row = s.scalar(
                sa.select(tables.AcceptanceReport)
                .where(tables.AcceptanceReport.cluster_id == cluster_id)
                .order_by(tables.AcceptanceReport.id.desc())
            )
            assert row is not None
            return row.report

    def check_invariants(self) -> None:
        """Nothing orphaned, nothing allocated twice, networks unique and only for live clusters."""
        check_invariants(self.sessionmaker)


def check_invariants(sessionmaker: orm.sessionmaker[orm.Session]) -> None:
    with sessionmaker() as s:
        clusters = {c.id: c for c in s.scalars(sa.select(models.Cluster))}
        for node in s.scalars(sa.select(models.Node)):
            if node.cluster_id is None:
                assert node.provisioning_state not in states.TENANT_STATES + (states.SANITIZING,), node.name
                assert node.tenant_id is None, node.name
            else:
                c = clusters[node.cluster_id]
                assert c.phase != phases.DELETED, f"{node.name} still in deleted cluster {c.name}"
                assert node.tenant_id == c.tenant_id, node.name
        for c in clusters.values():
            members = s.scalar(
                sa.select(sa.func.count()).select_from(models.Node).where(models.Node.cluster_id == c.id)
            )
            if c.phase == phases.READY:
                assert members == c.node_count, (c.name, members, c.node_count)
                active = s.scalar(
                    sa.select(sa.func.count())
                    .select_from(models.Node)
                    .where(models.Node.cluster_id == c.id, models.Node.provisioning_state == states.ACTIVE)
                )
                assert active == c.node_count, c.name
        for alloc in s.scalars(sa.select(tables.NetworkAllocation)):
            assert clusters[alloc.cluster_id].phase != phases.DELETED, "network of a deleted cluster"
        values = [(a.kind, a.value) for a in s.scalars(sa.select(tables.NetworkAllocation))]
        assert len(values) == len(set(values))
        for vol in s.scalars(sa.select(models.Volume).where(models.Volume.cluster_id.is_not(None))):
            assert clusters[vol.cluster_id].phase != phases.DELETED


def make_world(
    tmp: Path,
    node_count: int = 96,
    *,
    delays: bool = False,
    settings: phases.ReconcileSettings | None = None,
    seed: int = 3,
    url: str | None = None,
) -> World:
    url = url or f"sqlite:///{tmp / 'velyrix.db'}"
    engine = db.make_engine(url)
    db.upgrade(url=url, engine=engine)
    sm = orm.sessionmaker(engine, expire_on_commit=False)
    runtime = FleetRuntime.twin(
        sm,
        "us-east-1",
        node_counts={"hgx-h200-8g": node_count},
        seed=seed,
        delays=delays,
        settings=settings or phases.ReconcileSettings(poll_s=0.0, retry_backoff_s=0.0),
    )
    if delays and runtime.sim is not None:
        runtime.sim.clock.speed = None
    runtime.enroll()
    with sm() as s:
        tenant = models.Tenant(name="acme", display_name="ACME")
        s.add(tenant)
        s.commit()
        tid = tenant.id
    return World(engine, sm, runtime, tid)
