"""What the reconciler benches share (``bench_apply.py``, ``bench_reconcile_idle.py``): the embedded control
plane on SQLite under ``home``, its cursor executions counted on the engine, the digital twin's fleet of
us-east-1 H200 nodes (delays off) enrolled and burned in, a tenant ``bench``, and clusters declared Pending
as an apply leaves them."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa


@dataclass
class Fleet:
    """The twin's runtime, its engine, the statements counter (reset it before a measured part), the
    bench tenant's id, and the wall seconds enrollment and burn-in took."""

    runtime: Any
    engine: sa.Engine
    statements: list[int]
    tenant_id: str
    enrolled_s: float

    def declare(self, name: str, nodes: int) -> str:
        """A Pending cluster of ``nodes`` H200 nodes called ``name`` (InfiniBand, Slurm, 800 TB of parallel
        file system); its id."""
        from velyrix.controlplane import status
        from velyrix.controlplane.db import models

        spec = {
            "name": name,
            "region": "us-east-1",
            "node_type": "hgx-h200-8g",
            "node_count": nodes,
            "fabric": "infiniband-ndr",
            "scheduler": "slurm",
            "storage": {"parallel_fs_tb": 800.0},
        }
        with self.runtime.sessionmaker() as s:
            c = models.Cluster(
                tenant_id=self.tenant_id,
                name=name,
                region="us-east-1",
                node_type="hgx-h200-8g",
                node_count=nodes,
                spec=spec,
                plan={},
                conditions=[],
                phase_history=[],
                events=[],
            )
            status.set_phase(c, "Pending", actor="bench", reason="declared")
            s.add(c)
            s.commit()
            return str(c.id)


def twin_fleet(home: Path, nodes: int) -> Fleet:
    """The control plane at ``home``/velyrix.db and a twin of ``nodes`` hgx-h200-8g nodes (seed 1, the
    reconciler polling without pause or retry backoff), enrolled; the tenant ``bench`` made."""
    from sqlalchemy import orm

    from velyrix.controlplane import db
    from velyrix.controlplane.db import models
    from velyrix.controlplane.reconcile import phases
    from velyrix.controlplane.reconcile.runtime import FleetRuntime

    url = f"sqlite:///{home / 'velyrix.db'}"
    engine = db.make_engine(url)
    db.upgrade(url=url, engine=engine)
    statements = [0]

    @sa.event.listens_for(engine, "before_cursor_execute")
    def _count(*_: object) -> None:
        statements[0] += 1

    sm = orm.sessionmaker(engine, expire_on_commit=False)
    t0 = time.perf_counter()
    runtime = FleetRuntime.twin(
        sm,
        "us-east-1",
        node_counts={"hgx-h200-8g": nodes},
        seed=1,
        delays=False,
        settings=phases.ReconcileSettings(poll_s=0.0, retry_backoff_s=0.0),
    )
    runtime.enroll()
    enrolled_s = time.perf_counter() - t0
    with sm() as s:
        tenant = models.Tenant(name="bench", display_name="bench")
        s.add(tenant)
        s.commit()
        return Fleet(runtime, engine, statements, str(tenant.id), enrolled_s)
