"""The running cloud against the twin's own failures: ``velyrix up --spontaneous-faults`` for 30 simulated
days on 256 nodes, beside the offline ``velyrix health evaluate`` of the same size and seed.

What runs (all real processes and the real CLI): ``velyrix admin`` creates a tenant and an operator key in a
temporary ``VELYRIX_HOME``; ``velyrix up --nodes hgx-h200-8g=256 --spontaneous-faults --agent-step 3600
--until-days 30`` serves the API with a twin whose faults come at the catalog's rates and cause mix (with
their precursors), one agent per node (the twin collector, the agent's health engine, reports over HTTP),
the server's own judgement, the ladder and the reconciler; the clock moves one simulated hour after each
poll of every node (fast-forward). The tenant applies 32-node clusters until the region's available
capacity is used; then the run goes on to day 30 and ``velyrix report proactive --json`` gives the figures.
Last, ``velyrix health evaluate --days 30 --nodes 256 --seed S --json`` (hourly verdicts, the same cause
mix) gives the offline proactive policy's share for comparison.

Environment: ``BENCH_PROACTIVE_NODES`` (256), ``BENCH_PROACTIVE_DAYS`` (30), ``BENCH_PROACTIVE_SEED`` (1).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from velyrix.testing.postgres import free_port

NODES = int(os.environ.get("BENCH_PROACTIVE_NODES", "256"))
DAYS = float(os.environ.get("BENCH_PROACTIVE_DAYS", "30"))
SEED = int(os.environ.get("BENCH_PROACTIVE_SEED", "1"))
STEP_S = 3600.0
CLUSTER_NODES = 32


def _velyrix(env: dict[str, str], *args: str, timeout_s: float = 1800.0) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "velyrix.cli.main", *args], env=env, capture_output=True, text=True, timeout=timeout_s
    )
    if done.returncode != 0:
        raise RuntimeError(f"velyrix {' '.join(args)}: exit {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def _key(stdout: str) -> str:
    return stdout.strip().splitlines()[-1]


def _apply_clusters(http: httpx.Client, tenant: dict[str, str], operator: dict[str, str]) -> list[str]:
    """32-node clusters until the region's available capacity is used; waits until each is Ready."""
    ids: list[str] = []
    while True:
        region = http.get("/v1/regions/us-east-1", headers=operator).json()
        (cap,) = [c for c in region["capacity"] if c["node_type"] == "hgx-h200-8g"]
        if cap["available_nodes"] < CLUSTER_NODES:
            return ids
        body = {
            "name": f"train-{len(ids)}",
            "region": "us-east-1",
            "node_type": "hgx-h200-8g",
            "node_count": CLUSTER_NODES,
            "fabric": "infiniband-ndr",
            "scheduler": "slurm",
        }
        r = http.post("/v1/clusters", headers=tenant, json=body)
        if r.status_code >= 400:
            return ids
        cid = r.json()["id"]
        ids.append(cid)
        deadline = time.monotonic() + 300
        while http.get(f"/v1/clusters/{cid}", headers=tenant).json()["status"]["phase"] != "Ready":
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster {body['name']} not Ready after 300 s")
            time.sleep(0.2)


def run_up(home: Path) -> tuple[dict[str, Any], float, int]:
    """The running system; returns its proactive report, the wall seconds of the run and clusters applied."""
    env = {**os.environ, "VELYRIX_HOME": str(home)}
    tenant_key = _key(_velyrix(env, "admin", "create-tenant", "acme"))
    operator_key = _key(_velyrix(env, "admin", "create-provider-key", "noc", "--role", "operator"))
    port = free_port()
    command = [sys.executable, "-m", "velyrix.cli.main", "up", "--port", str(port), "--seed", str(SEED)]
    command += ["--nodes", f"hgx-h200-8g={NODES}", "--spontaneous-faults", "--no-delays", "--agent-interval", "0.05"]
    command += ["--agent-step", str(STEP_S), "--until-days", str(DAYS)]
    log = open(home / "up.log", "w")
    up = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    tenant = {"Authorization": f"Bearer {tenant_key}"}
    operator = {"Authorization": f"Bearer {operator_key}"}
    started = time.monotonic()
    try:
        with httpx.Client(base_url=url, timeout=30) as http:
            while True:
                assert up.poll() is None, (home / "up.log").read_text()[-3000:]
                try:
                    if http.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            clusters = _apply_clusters(http, tenant, operator)
            last_days = -1.0
            while True:
                assert up.poll() is None, (home / "up.log").read_text()[-3000:]
                body = http.get("/v1/sim/proactive", headers=operator).json()
                if body["days"] >= DAYS - 1e-6 and body["days"] == last_days:
                    break  # the clock stopped at the end: one more poll round has been judged
                last_days = body["days"]
                time.sleep(2.0)
            wall_s = time.monotonic() - started
        cli_env = {**env, "VELYRIX_ENDPOINT": url, "VELYRIX_API_KEY": operator_key}
        report = json.loads(_velyrix(cli_env, "report", "proactive", "--json"))
    finally:
        up.terminate()
        up.wait(30)
        log.close()
    return report, wall_s, len(clusters)


def run_offline() -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    out = _velyrix(
        dict(os.environ),
        "health",
        "evaluate",
        "--days",
        str(DAYS),
        "--nodes",
        str(NODES),
        "--seed",
        str(SEED),
        "--json",
    )
    return json.loads(out), time.monotonic() - started


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="velyrix-bench-proactive-"))
    try:
        report, up_wall_s, clusters = run_up(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    offline, offline_wall_s = run_offline()
    pro = offline["policies"]["proactive"]
    caught, prone = pro["failures_caught_before_job_damage"], pro["precursor_failures"]
    print(f"velyrix up --spontaneous-faults: {NODES} nodes, {report['days']:g} simulated days, seed {SEED}")
    print(f"  {clusters} clusters of {CLUSTER_NODES} nodes; wall {up_wall_s:.0f} s")
    print(
        f"  spontaneous failures {report['spontaneous_failures']} (catalog rate "
        f"{report['failure_rate_per_1000_node_days']} per 1,000 node-days: "
        f"{report['expected_failures_at_rate']} expected)"
    )
    print(
        f"  failures on nodes in service {report['failures']}, detected {report['detected']}, missed {report['missed']}"
    )
    print(
        f"  detection after the fault: median {report['detection_s']['median']} s, max {report['detection_s']['max']} s"
    )
    print(
        f"  with a precursor {report['precursor_failures']}, caught before the fault {report['caught_before_fault']}: "
        f"proactive share {report['proactive_share']}; of all failures {report['caught_share_of_all_failures']}"
    )
    print(f"  not counted: {report['not_counted']}")
    print(f"velyrix health evaluate --days {DAYS:g} --nodes {NODES} --seed {SEED}: wall {offline_wall_s:.0f} s")
    print(
        f"  proactive policy: precursor failures {prone}, caught before job damage {caught}: "
        f"share {round(caught / prone, 4) if prone else None}; failures {pro['failures']}"
    )


if __name__ == "__main__":
    main()
