"""Apply-to-Ready on the digital twin with delays off: a 64-node and a 4,096-node cluster in one run, on the
embedded control plane (SQLite in WAL mode under a temporary VELYRIX_HOME), through the real reconciler
(one transaction per phase, per-node transitions recorded, acceptance judged, report signed).

Figures per size: wall seconds from the declared cluster to Ready, CPU seconds of the process, database
statements (cursor executions, counted on the engine) and each per node. Target (issue 14): per-node cost at
4,096 nodes at most 1.5x that at 64. The twin holds both clusters and the region's spare reserve
(``FLEET`` hgx-h200-8g nodes); enrollment and burn-in of the fleet happen before the clock starts.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

SIZES = (64, 4096)
FLEET = 4416  # 138 scalable units of 32: both clusters plus the 5% spare reserve (catalog/data/regions.toml)
TARGET = 1.5


def run(home: Path) -> list[dict[str, float]]:
    from bench.twin_fleet import twin_fleet
    from velyrix.controlplane.db import models

    fleet = twin_fleet(home, FLEET)
    runtime, statements = fleet.runtime, fleet.statements
    print(
        f"fleet of {len(runtime.sim.nodes) if runtime.sim else 0} nodes enrolled and burned in "
        f"in {fleet.enrolled_s:.1f} s (not timed below)",
        flush=True,
    )
    rows = []
    for size in SIZES:
        cid = fleet.declare(f"c{size}", size)
        statements[0] = 0
        start, cpu = time.perf_counter(), time.process_time()
        runtime.reconciler.settle(timeout_s=1800)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        with runtime.sessionmaker() as s:
            c = s.get(models.Cluster, cid)
            assert c is not None and c.phase == "Ready", c.phase if c else None
        rows.append(
            {
                "nodes": size,
                "wall_s": wall,
                "cpu_s": cpu,
                "statements": statements[0],
                "ms_per_node": wall / size * 1000,
                "cpu_ms_per_node": cpu / size * 1000,
                "statements_per_node": statements[0] / size,
            }
        )
    fleet.engine.dispose()
    return rows


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="velyrix-bench-apply-") as tmp:
        os.environ["VELYRIX_HOME"] = tmp
        os.environ.pop("VELYRIX_DATABASE_URL", None)
        rows = run(Path(tmp))
    print(f"{'nodes':>6} {'wall s':>8} {'ms/node':>8} {'CPU ms/node':>12} {'statements':>11} {'stmts/node':>11}")
    for r in rows:
        print(
            f"{r['nodes']:>6} {r['wall_s']:>8.2f} {r['ms_per_node']:>8.2f} {r['cpu_ms_per_node']:>12.2f} "
            f"{r['statements']:>11} {r['statements_per_node']:>11.2f}"
        )
    small, big = rows[0], rows[-1]
    ratios = {k: big[k] / small[k] for k in ("ms_per_node", "cpu_ms_per_node", "statements_per_node")}
    print(
        f"per-node ratio {big['nodes']:,} vs {small['nodes']}: wall {ratios['ms_per_node']:.2f}x, CPU "
        f"{ratios['cpu_ms_per_node']:.2f}x, statements {ratios['statements_per_node']:.2f}x (target <= {TARGET}x): "
        + ("OK" if max(ratios.values()) <= TARGET else "OVER TARGET")
    )


if __name__ == "__main__":
    main()
