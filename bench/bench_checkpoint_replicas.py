"""Audit checkpoints published by several replicas at once, and the start-up freeze of ``--workers`` processes.

1. Replicas: ``REPLICAS`` API apps (each its own engine and ``checkpoints.Publisher``) on one PostgreSQL
   (``velyrix.testing.postgres``). Each of ``ROUNDS`` rounds grows the log by one audit event, then every
   publisher ticks at the same moment (a barrier), as the publisher threads of replicas whose intervals
   line up. Figures: checkpoints stored per tree size (target: one), and the CPU time of one tick of the
   publisher thread (``time.thread_time``, median).
2. Workers: a fresh interpreter loads the app as a uvicorn worker does (``uvicorn.Config(...).load()``) from
   ``velyrix.ops.service:create_app`` (what ``velyrix server --workers N`` loaded before) and from
   ``velyrix.cli.serving:worker_app`` (with the start-up freeze), alternating ``GC_RUNS`` times; then it
   times full collections (``gc.collect()``, CPU time of the process: ``time.process_time``, median of
   ``COLLECTIONS``) and reports the objects frozen.
"""

from __future__ import annotations

import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

REPLICAS = 3
ROUNDS = 40
GC_RUNS = 3
COLLECTIONS = 5
TARGETS = {"create_app (main)": "velyrix.ops.service:create_app", "worker_app": "velyrix.cli.serving:worker_app"}

_WORKER = """import gc, json, sys, time, uvicorn
config = uvicorn.Config(sys.argv[1], factory=True, log_level="warning")
config.load()
cpu = []
for _ in range(int(sys.argv[2])):
    start = time.process_time()
    gc.collect()
    cpu.append(time.process_time() - start)
print(json.dumps({"frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects()), "cpu_s": cpu}))
"""


def _replicas(url: str) -> None:
    from velyrix.controlplane import audit
    from velyrix.controlplane.audit import checkpoints
    from velyrix.ops.service import create_app

    apps = [create_app(url)] + [create_app(url, migrate=False) for _ in range(REPLICAS - 1)]
    publishers = [checkpoints.Publisher(app.state.sessionmaker, 0.0) for app in apps]
    barrier = threading.Barrier(REPLICAS)
    tick_cpu: list[float] = []
    published = collections.Counter[int]()
    failures: list[str] = []
    info = audit.RequestInfo(request_id="req_bench", source_address=None, method="POST", path="/v1/x")

    def replica(i: int) -> None:
        for r in range(ROUNDS):
            if i == 0:
                with apps[0].state.sessionmaker() as s:
                    audit.record(s, info, None, action="bench.grow", target=f"things/{r}")
                    s.commit()
            barrier.wait()
            start = time.thread_time()
            try:
                document = publishers[i].tick()
            except Exception as exc:  # counted, not hidden: a refused insert is a failure of the claim
                failures.append(f"{type(exc).__name__}: {exc}"[:200])
                document = None
            tick_cpu.append(time.thread_time() - start)
            if document is not None:
                published[i] += 1
            barrier.wait()

    threads = [threading.Thread(target=replica, args=(i,)) for i in range(REPLICAS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    import sqlalchemy as sa

    with apps[0].state.engine.connect() as conn:
        per_size = dict(conn.execute(sa.text("SELECT tree_size, count(*) FROM audit_checkpoints GROUP BY 1")).all())
    for app in apps:
        app.state.engine.dispose()
    counts = collections.Counter(int(n) for n in per_size.values())
    print(
        f"replicas: {REPLICAS} publishers x {ROUNDS} rounds on PostgreSQL, {wall:.1f} s wall: "
        f"{len(per_size)} tree sizes signed, checkpoints per size {dict(sorted(counts.items()))}, "
        f"published by replica {dict(sorted(published.items()))}, failed ticks {len(failures)}"
        + (f" (first: {failures[0]})" if failures else "")
    )
    print(
        f"  publisher tick CPU: median {statistics.median(tick_cpu) * 1e3:.2f} ms, "
        f"mean {statistics.fmean(tick_cpu) * 1e3:.2f} ms over {len(tick_cpu)} ticks"
    )


def _workers() -> None:
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in TARGETS}
    for _ in range(GC_RUNS):
        for name, target in TARGETS.items():
            done = subprocess.run(
                [sys.executable, "-c", _WORKER, target, str(COLLECTIONS)],
                capture_output=True,
                text=True,
                check=True,
                env=os.environ,
            )
            results[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    medians = {name: statistics.median(c for r in runs for c in r["cpu_s"]) for name, runs in results.items()}
    for name, runs in results.items():
        per_run = ", ".join(f"{statistics.median(r['cpu_s']) * 1e3:.3f}" for r in runs)
        print(
            f"workers: {name}: frozen {runs[-1]['frozen']:,} objects, tracked {runs[-1]['tracked']:,}; "
            f"full gc.collect() CPU median {medians[name] * 1e3:.3f} ms "
            f"(runs: {per_run} ms)"
        )
    base, new = medians["create_app (main)"], medians["worker_app"]
    print(f"  ratio worker_app / create_app: {new / base:.5f} (create_app {base / max(new, 1e-9):,.0f}x worker_app)")


def main() -> None:
    from velyrix.testing import postgres

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["VELYRIX_HOME"] = os.path.join(tmp, "home")
        os.environ["VELYRIX_SIGNING_KEY_DIR"] = os.path.join(tmp, "keys")
        os.environ.pop("VELYRIX_DATABASE_URL", None)
        if postgres.find_bin_dir() is not None:
            with postgres.PostgresServer.start() as pg:
                _replicas(pg.create_database("bench_checkpoints"))
        else:
            print("replicas: skipped (PostgreSQL server binaries not installed)")
        _workers()
    print(f"load average {os.getloadavg()[0]:.1f} at {time.strftime('%H:%M')}")


if __name__ == "__main__":
    main()
