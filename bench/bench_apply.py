"""Apply-to-Ready on the digital twin with delays off: a 64-node and a 1,024-node cluster in one run, on the
embedded control plane (SQLite in WAL mode under a temporary VELYRIX_HOME), through the real reconciler
(one transaction per phase, per-node transitions recorded, acceptance judged, report signed).

Figures per size: wall seconds from the declared cluster to Ready, database statements (cursor executions,
counted on the engine) and both per node. Target: per-node cost at 1,024 nodes at most 2x that at 64.
The twin is the region's full hgx-h200-8g capacity (1,152 nodes, 36 scalable units); enrollment and burn-in
of the fleet happen before the clock starts.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

SIZES = (64, 1024)


def _cluster(sm: object, tenant_id: str, name: str, nodes: int) -> str:
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
    with sm() as s:  # type: ignore[operator]
        c = models.Cluster(
            tenant_id=tenant_id,
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


def run(home: Path) -> list[dict[str, float]]:
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
        node_counts={"hgx-h200-8g": 1152},
        seed=1,
        delays=False,
        settings=phases.ReconcileSettings(poll_s=0.0, retry_backoff_s=0.0),
    )
    runtime.enroll()
    print(
        f"fleet of {len(runtime.sim.nodes) if runtime.sim else 0} nodes enrolled and burned in "
        f"in {time.perf_counter() - t0:.1f} s (not timed below)",
        flush=True,
    )
    with sm() as s:
        tenant = models.Tenant(name="bench", display_name="bench")
        s.add(tenant)
        s.commit()
        tenant_id = tenant.id
    rows = []
    for size in SIZES:
        cid = _cluster(sm, tenant_id, f"c{size}", size)
        statements[0] = 0
        start = time.perf_counter()
        runtime.reconciler.settle(timeout_s=600)
        wall = time.perf_counter() - start
        with sm() as s:
            c = s.get(models.Cluster, cid)
            assert c is not None and c.phase == "Ready", c.phase if c else None
        rows.append(
            {
                "nodes": size,
                "wall_s": wall,
                "statements": statements[0],
                "ms_per_node": wall / size * 1000,
                "statements_per_node": statements[0] / size,
            }
        )
    engine.dispose()
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="velyrix-bench-apply-") as tmp:
        os.environ["VELYRIX_HOME"] = tmp
        os.environ.pop("VELYRIX_DATABASE_URL", None)
        rows = run(Path(tmp))
    print(f"{'nodes':>6} {'wall s':>8} {'ms/node':>8} {'statements':>11} {'stmts/node':>11}")
    for r in rows:
        print(
            f"{r['nodes']:>6} {r['wall_s']:>8.2f} {r['ms_per_node']:>8.2f} {r['statements']:>11} "
            f"{r['statements_per_node']:>11.2f}"
        )
    small, big = rows[0], rows[-1]
    t_ratio = big["ms_per_node"] / small["ms_per_node"]
    s_ratio = big["statements_per_node"] / small["statements_per_node"]
    print(
        f"per-node ratio 1,024 vs 64: wall {t_ratio:.2f}x, statements {s_ratio:.2f}x (target <= 2x): "
        + ("OK" if max(t_ratio, s_ratio) <= 2.0 else "OVER TARGET")
    )


if __name__ == "__main__":
    main()
