"""Control-plane API throughput: authenticated ``GET /v1/clusters/{id}`` against the bare
``GET /healthz`` of the same app, on the same uvicorn server (one worker, SQLite in WAL mode under a
temporary VELYRIX_HOME), driven by a load generator on loopback: ``wrk`` (Debian package) when
installed, else a multi-process httpx client. The two endpoints are measured alternately, several
rounds; the figure is the median of the per-round throughput ratios (target >= 0.5).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROUNDS = 5
SECONDS_PER_RUN = 4
CONNECTIONS = 16


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _setup(home: Path) -> tuple[str, str]:
    """A tenant, its owner key and one cluster, straight in the database; returns (key, cluster id)."""
    env = {**os.environ, "VELYRIX_HOME": str(home)}
    env.pop("VELYRIX_DATABASE_URL", None)
    code = """
import json
from velyrix.controlplane import db, specs, status
from velyrix.controlplane.auth import principals
from velyrix.planners import plan
db.upgrade()
with db.session() as s:
    t = db.models.Tenant(name="bench", display_name="Bench"); s.add(t); s.flush()
    _, secret = principals.issue_key(s, tenant_id=t.id, name="bench", role="viewer")
    spec = specs.validate(specs.ClusterSpecBody(name="bench", region="us-east-1", node_type="hgx-h200-8g",
        node_count=64, fabric="infiniband-ndr", scheduler="slurm", storage={"parallel_fs_tb": 800}))
    c = db.models.Cluster(tenant_id=t.id, name=spec.name, region=spec.region, node_type=spec.node_type,
        node_count=spec.node_count, spec=specs.to_body(spec), plan=plan.plan_cluster(spec), conditions=[],
        phase_history=[], events=[])
    status.set_phase(c, "Pending", actor="bench", reason="bench"); s.add(c); s.flush()
    print(json.dumps({"key": secret, "cluster": c.id}))
"""
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data["key"], data["cluster"]


def _wrk(url: str, headers: dict[str, str]) -> float:
    cmd = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{SECONDS_PER_RUN}s"]
    for k, v in headers.items():
        cmd += ["-H", f"{k}: {v}"]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        raise RuntimeError(f"{non2xx.group(1)} error answers from {url}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]


def _httpx_worker(args: tuple[str, dict[str, str], float]) -> int:
    import httpx

    url, headers, until = args
    n = 0
    with httpx.Client(headers=headers) as http:
        while time.monotonic() < until:
            http.get(url).raise_for_status()
            n += 1
    return n


def _httpx(url: str, headers: dict[str, str]) -> float:
    procs = max(2, (os.cpu_count() or 2))
    start = time.monotonic()
    with multiprocessing.Pool(procs) as pool:
        counts = pool.map(_httpx_worker, [(url, headers, start + SECONDS_PER_RUN)] * procs)
    return sum(counts) / (time.monotonic() - start)


@contextlib.contextmanager
def served(home: Path, pids: list[int] | None = None) -> Iterator[str]:
    """``velyrix server`` on a free loopback port with ``home`` as VELYRIX_HOME (its SQLite default):
    yields the base URL once the port accepts connections (its process id appended to ``pids``);
    stopped (killed after 10 s) on exit."""
    port = _free_port()
    env = {**os.environ, "VELYRIX_HOME": str(home)}
    env.pop("VELYRIX_DATABASE_URL", None)
    server = subprocess.Popen(
        [sys.executable, "-m", "velyrix.cli.main", "server", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120  # start-up (imports, migrations) on a loaded machine
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the API server did not start") from None
                time.sleep(0.1)
        if pids is not None:
            pids.append(server.pid)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    tool = "wrk" if shutil.which("wrk") else "httpx"
    load = _wrk if tool == "wrk" else _httpx
    with tempfile.TemporaryDirectory(prefix="velyrix-bench-") as tmp:
        home = Path(tmp)
        key, cluster_id = _setup(home)
        with served(home) as base:
            auth = {"Authorization": f"Bearer {key}"}
            load(f"{base}/healthz", {})  # warm-up
            load(f"{base}/v1/clusters/{cluster_id}", auth)
            bare, authed, ratios = [], [], []
            for _ in range(ROUNDS):
                b = load(f"{base}/healthz", {})
                a = load(f"{base}/v1/clusters/{cluster_id}", auth)
                bare.append(b)
                authed.append(a)
                ratios.append(a / b)
    print(f"load generator: {tool}, {CONNECTIONS} connections, {SECONDS_PER_RUN} s per run, {ROUNDS} rounds alternated")
    for label, runs in (("GET /healthz (bare)", bare), ("GET /v1/clusters/{id} (authenticated)", authed)):
        print(f"{label:40s} median {statistics.median(runs):8.0f} req/s  runs {[round(x) for x in runs]}")
    print(f"median ratio authenticated / bare: {statistics.median(ratios):.2f} (target >= 0.5)")


if __name__ == "__main__":
    main()
