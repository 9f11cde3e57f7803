"""Scrape cost of the agent and the twin's fleet exporter against Debian's prometheus-node-exporter.

Three servers run as separate processes on loopback ports: ``velyrix agent --collector sim`` (one 8-GPU
H200 node with a job mapping), ``velyrix sim exporter`` (1,000 nodes) and ``prometheus-node-exporter``.
Rounds alternate the three scrapes; every scrape collects afresh (``--min-interval 0``). A scrape is an
HTTP GET of the whole body; its cost per exported series is wall time / series. The target: our cost per
series at most 2x node_exporter's, compared on medians of the same run.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from velyrix.agent import jobs
from velyrix.testing.prometheus import free_port

ROUNDS = 12
FLEET_NODES = 1000


def _series(body: bytes) -> int:
    return sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))


def _wait(url: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=60).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def _scrape(client: httpx.Client, url: str) -> tuple[float, int]:
    start = time.perf_counter()
    body = client.get(url).content
    return time.perf_counter() - start, _series(body)


def main() -> None:
    node_exporter = shutil.which("prometheus-node-exporter")
    if node_exporter is None:
        raise RuntimeError("prometheus-node-exporter is not installed (scripts/apt-packages.txt)")
    velyrix = str(Path(sys.executable).with_name("velyrix"))
    job_dir = Path(tempfile.mkdtemp(prefix="velyrix-bench-jobs-"))
    jobs.write_prolog(job_dir, "bench-1", list(range(8)), user="bench", team="perf", cost_center="cc-0")
    ports = {name: free_port() for name in ("node", "fleet", "node_exporter")}
    procs = [
        subprocess.Popen(
            [
                velyrix,
                "agent",
                "--collector",
                "sim",
                "--sim-load",
                "70",
                "--listen",
                "127.0.0.1",
                "--port",
                str(ports["node"]),
                "--job-map-dir",
                str(job_dir),
                "--min-interval",
                "0",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            [
                velyrix,
                "sim",
                "exporter",
                "--nodes",
                f"hgx-h200-8g={FLEET_NODES}",
                "--load",
                "70",
                "--port",
                str(ports["fleet"]),
                "--min-interval",
                "0",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            [node_exporter, f"--web.listen-address=127.0.0.1:{ports['node_exporter']}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ),
    ]
    urls = {name: f"http://127.0.0.1:{port}/metrics" for name, port in ports.items()}
    try:
        for url in urls.values():
            _wait(url)
        times: dict[str, list[float]] = {name: [] for name in urls}
        series: dict[str, int] = {}
        with httpx.Client(timeout=120) as client:
            for url in urls.values():  # warm-up
                _scrape(client, url)
            for _ in range(ROUNDS):
                for name, url in urls.items():
                    dt, n = _scrape(client, url)
                    times[name].append(dt)
                    series[name] = n
        per_series = {name: statistics.median(t) / series[name] for name, t in times.items()}
        base = per_series["node_exporter"]
        print(f"{'target':<34} {'series':>8} {'median scrape':>14} {'per series':>11} {'ratio':>6}")
        labels = {
            "node": "velyrix agent, 8-GPU node (sim)",
            "fleet": f"velyrix sim exporter, {FLEET_NODES} nodes",
            "node_exporter": "prometheus-node-exporter",
        }
        for name in urls:
            print(
                f"{labels[name]:<34} {series[name]:>8} {statistics.median(times[name]) * 1000:>11.1f} ms "
                f"{per_series[name] * 1e6:>8.2f} us {per_series[name] / base:>6.2f}"
            )
        worst = max(per_series["node"], per_series["fleet"]) / base
        print(
            f"target: cost per series <= 2x node_exporter's -> worst ratio {worst:.2f} "
            f"({'met' if worst <= 2 else 'NOT met'})"
        )
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(job_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
