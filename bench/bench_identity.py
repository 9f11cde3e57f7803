"""Identity on the request path: a session-authenticated page (``GET /ui`` with the browser's session
cookie: session lookup, idle/absolute checks, the tenant's clusters rendered) and a key-authenticated
``GET /v1/clusters/{id}``, each against the bare ``GET /healthz`` of the same uvicorn server (one
worker, SQLite in WAL mode under a temporary VELYRIX_HOME), alternated over several rounds with the load
generator of ``bench_api`` (wrk when installed). Figures: medians of the per-round ratios (target >= 0.5),
and the server process's CPU time per request of each route (its ``/proc`` user + system time over the
run), which the other load of a shared machine moves less than throughput.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import bench_api

ROUNDS = 3


def _setup(home: Path) -> dict[str, str]:
    env = {**os.environ, "VELYRIX_HOME": str(home)}
    env.pop("VELYRIX_DATABASE_URL", None)
    code = """
import json
from velyrix.controlplane import db, specs, status
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db.models.identity import User
from velyrix.controlplane.identity import sessions
from velyrix.planners import plan
db.upgrade()
with db.session() as s:
    t = db.models.Tenant(name="bench", display_name="Bench"); s.add(t); s.flush()
    _, key = principals.issue_key(s, tenant_id=t.id, name="bench", role="viewer")
    u = User(tenant_id=t.id, user_name="alice@bench.example", role="viewer", groups=[], scim={}); s.add(u); s.flush()
    _, cookie = sessions.start(s, u, "oidc")
    spec = specs.validate(specs.ClusterSpecBody(name="bench", region="us-east-1", node_type="hgx-h200-8g",
        node_count=64, fabric="infiniband-ndr", scheduler="slurm", storage={"parallel_fs_tb": 800}))
    c = db.models.Cluster(tenant_id=t.id, name=spec.name, region=spec.region, node_type=spec.node_type,
        node_count=spec.node_count, spec=specs.to_body(spec), plan=plan.plan_cluster(spec), conditions=[],
        phase_history=[], events=[])
    status.set_phase(c, "Pending", actor="bench", reason="bench"); s.add(c); s.flush()
    print(json.dumps({"key": key, "cookie": cookie, "cluster": c.id}))
"""
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    tool = "wrk" if shutil.which("wrk") else "httpx"
    load = bench_api._wrk if tool == "wrk" else bench_api._httpx
    with tempfile.TemporaryDirectory(prefix="velyrix-bench-") as tmp:
        home = Path(tmp)
        made = _setup(home)
        pids: list[int] = []
        with bench_api.served(home, pids) as base:
            routes = {
                "GET /healthz (bare)": (f"{base}/healthz", {}),
                "GET /ui (session cookie)": (f"{base}/ui", {"Cookie": f"velyrix_session={made['cookie']}"}),
                "GET /v1/clusters/{id} (API key)": (
                    f"{base}/v1/clusters/{made['cluster']}",
                    {"Authorization": f"Bearer {made['key']}"},
                ),
            }
            for url, headers in routes.values():
                load(url, headers)  # warm-up
            runs: dict[str, list[float]] = {label: [] for label in routes}
            cpu_us: dict[str, list[float]] = {label: [] for label in routes}
            for _ in range(ROUNDS):
                for label, (url, headers) in routes.items():
                    before = bench_api.cpu_s(pids[0])
                    rate = load(url, headers)
                    runs[label].append(rate)
                    cpu_us[label].append(1e6 * (bench_api.cpu_s(pids[0]) - before) / (rate * bench_api.SECONDS_PER_RUN))
    secs = bench_api.SECONDS_PER_RUN
    print(f"load generator: {tool}, {bench_api.CONNECTIONS} connections, {secs} s per run, {ROUNDS} rounds alternated")
    bare = runs["GET /healthz (bare)"]
    for label, values in runs.items():
        print(f"{label:36s} median {statistics.median(values):8.0f} req/s  runs {[round(x) for x in values]}")
    for label in list(runs)[1:]:
        ratio = statistics.median(a / b for a, b in zip(runs[label], bare, strict=True))
        print(f"median ratio {label} / bare: {ratio:.2f} (target >= 0.5)")
    # The server's CPU per request (user + system, /proc): what the shared machine's other load moves least.
    for label, values in cpu_us.items():
        print(
            f"server CPU per request {label:36s} median {statistics.median(values):6.0f} us"
            f"  runs {[round(x) for x in values]}"
        )
    bare_cpu = statistics.median(cpu_us["GET /healthz (bare)"])
    for label in list(cpu_us)[1:]:
        print(f"CPU ratio bare / {label}: {bare_cpu / statistics.median(cpu_us[label]):.2f}")


if __name__ == "__main__":
    main()
