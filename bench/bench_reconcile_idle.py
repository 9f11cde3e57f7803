"""The cost of a settled fleet to the reconciler: CPU seconds of idle passes on the digital twin (delays off),
on the embedded control plane (SQLite in WAL mode under a temporary VELYRIX_HOME), through the real
reconciler. Every cluster is applied to Ready first (not timed); then:

- ``100 x 64``: one ``run_once`` pass with every cluster due (``_not_before`` cleared) over 100 settled
  clusters of 64 nodes each (6,400 nodes): CPU ms of the whole pass (target: under 50 ms);
- ``1 x 64`` and ``1 x 4,096``: ``reconcile_one`` of one settled cluster of that size (in the same region):
  CPU ms per cluster, and the ratio 4,096 vs 64 (target: within 2x).

CPU is ``time.process_time`` (the bench runs no other thread), the median of ``REPEATS`` passes, so other
processes on the machine do not count. Database statements per pass are counted on the engine.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.twin_fleet import twin_fleet

REPEATS = 15
SPARE = 0.05  # the region's spare_fraction (catalog/data/regions.toml): allocation keeps it free


def _cpu_ms(fn: Callable[[], object], statements: list[int]) -> tuple[float, float]:
    """Median CPU ms of ``fn`` over ``REPEATS`` calls, and the statements of one call."""
    fn()  # warm: statement caches compiled
    samples = []
    for _ in range(REPEATS):
        statements[0] = 0
        start = time.process_time()
        fn()
        samples.append((time.process_time() - start) * 1000)
    return statistics.median(samples), float(statements[0])


def _many_small(home: Path) -> tuple[float, float]:
    fleet = twin_fleet(home, math.ceil(100 * 64 / (1 - SPARE)) + 32)
    runtime, engine, statements = fleet.runtime, fleet.engine, fleet.statements
    for i in range(100):
        fleet.declare(f"s{i:03d}", 64)
    t0 = time.perf_counter()
    runtime.reconciler.settle(timeout_s=1800)
    print(f"100 clusters of 64 nodes applied in {time.perf_counter() - t0:.1f} s (not timed below)", flush=True)
    rec = runtime.reconciler

    def one_pass() -> None:
        rec._not_before.clear()  # every cluster due: the pass looks at all 100
        rec.run_once()

    out = _cpu_ms(one_pass, statements)
    engine.dispose()
    return out


def _one_big(home: Path) -> dict[int, tuple[float, float]]:
    fleet = twin_fleet(home, math.ceil((4096 + 64) / (1 - SPARE)) + 32)
    runtime, engine, statements = fleet.runtime, fleet.engine, fleet.statements
    ids = {n: fleet.declare(f"c{n}", n) for n in (64, 4096)}
    t0 = time.perf_counter()
    runtime.reconciler.settle(timeout_s=1800)
    print(f"clusters of 64 and 4,096 nodes applied in {time.perf_counter() - t0:.1f} s (not timed below)", flush=True)
    out = {}
    for n, cid in ids.items():
        assert runtime.reconciler.reconcile_one(cid) is None, f"cluster of {n} is not settled"
        out[n] = _cpu_ms(lambda cid=cid: runtime.reconciler.reconcile_one(cid), statements)
    engine.dispose()
    return out


def main() -> None:
    os.environ.pop("VELYRIX_DATABASE_URL", None)
    with tempfile.TemporaryDirectory(prefix="velyrix-bench-idle-") as tmp:
        os.environ["VELYRIX_HOME"] = tmp
        (Path(tmp) / "a").mkdir()
        (Path(tmp) / "b").mkdir()
        many_ms, many_stmts = _many_small(Path(tmp) / "a")
        big = _one_big(Path(tmp) / "b")
    print(f"{'idle pass':<26} {'CPU ms':>8} {'statements':>11}")
    print(f"{'100 clusters x 64 nodes':<26} {many_ms:>8.2f} {many_stmts:>11.0f}")
    for n, (ms, stmts) in big.items():
        print(f"{f'1 cluster x {n:,} nodes':<26} {ms:>8.3f} {stmts:>11.0f}")
    ratio = big[4096][0] / big[64][0]
    print(f"100 x 64 pass: {many_ms:.1f} ms CPU (target < 50 ms): " + ("OK" if many_ms < 50 else "OVER TARGET"))
    print(f"settled 4,096 vs 64 nodes: {ratio:.2f}x CPU (target <= 2x): " + ("OK" if ratio <= 2.0 else "OVER TARGET"))


if __name__ == "__main__":
    main()
