"""The operator's fleet grid (``/console/fleet``) with 1,024 nodes in headless Debian Chromium: a
``velyrix server`` (one uvicorn worker, SQLite under a temporary VELYRIX_HOME) with 1,024 nodes in 32
scalable units of 8 racks (allocated to 8 tenants, free, quarantined, RMA, sanitizing, with their last
agent reports), signed in as an operator of the provider's tenant (a session with a second factor).

Figures, over ``VELYRIX_BENCH_FLEET_LOADS`` page loads (default 10) after a warm-up:
- in the browser: navigation start to the load event (``PerformanceNavigationTiming.loadEventEnd``),
  median and worst; target < 2 s (issue 21);
- the server's answer alone (``responseStart - requestStart``, the time to the first byte), median;
- the page's size (bytes of HTML) and its element count;
- the server's CPU seconds per page (``/proc`` user + system over the loads), and the same for the small
  capacity page in the same run (the ratio says what the 1,024 cells cost, whatever the machine's load).

Run: ``.venv/bin/python -m bench console_fleet`` (``VELYRIX_BENCH_FLEET_NODES``: another node count)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import bench_api

NODES = int(os.environ.get("VELYRIX_BENCH_FLEET_NODES", "1024"))
LOADS = int(os.environ.get("VELYRIX_BENCH_FLEET_LOADS", "10"))
CHROMIUM = "/usr/bin/chromium"
PROVIDER = "velyrix-noc"
SEED = """
import json, sys
from velyrix.controlplane import db
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import health
from velyrix.controlplane.db.models.identity import User
from velyrix.controlplane.identity import sessions
count = int(sys.argv[1])
db.upgrade()
with db.session() as s:
    noc = models.Tenant(name="velyrix-noc", display_name="NOC"); s.add(noc)
    tenants = [models.Tenant(name=f"tenant-{i}", display_name=f"Tenant {i}") for i in range(8)]
    s.add_all(tenants); s.flush()
    user = User(tenant_id=noc.id, user_name="ops@noc.example", role="operator", groups=[], scim={})
    s.add(user); s.flush()
    _, cookie = sessions.start(s, user, "oidc", mfa=True)
    for i in range(count):
        su, rack, slot = i // 32, (i % 32) // 4, i % 32
        kind = i % 16
        state, stage, tenant = "allocated", "production", tenants[(i // 64) % 8].id
        if kind == 13: state, tenant = "available", None
        if kind == 14: state, stage, tenant = "available", "quarantined", None
        if kind == 15 and i % 32 == 15: state, tenant = "sanitizing", None
        if kind == 15 and i % 32 != 15: state, stage, tenant = "failed", "rma", None
        hardware = {"serial": f"SN{i:05d}", "position": {"region": "us-east-1", "su": su, "rack": f"su{su}-r{rack}",
                    "slot": slot, "su_nodes": 32}}
        node = models.Node(name=f"gpu-{i:05d}", region="us-east-1", node_type="hgx-h200-8g", tenant_id=tenant,
                           provisioning_state=state, fleet_stage=stage, hardware=hardware, labels={})
        s.add(node); s.flush()
        s.add(health.NodeReport(node_id=node.id, tenant_id=tenant, collected_at_s=1.0, up=True, problems=[],
                                sample={}, health_level=3 if kind == 14 else 0, health_summary=""))
    s.commit()
    print(json.dumps({"cookie": cookie}))
"""
TIMING = """() => { const n = performance.getEntriesByType("navigation")[0];
  return {load_ms: n.loadEventEnd - n.startTime, server_ms: n.responseStart - n.requestStart,
          bytes: n.transferSize, elements: document.getElementsByTagName("*").length,
          cells: document.querySelectorAll(".n").length}; }"""


def _seed(home: Path) -> str:
    env = {**os.environ, "VELYRIX_HOME": str(home)}
    env.pop("VELYRIX_DATABASE_URL", None)
    out = subprocess.run([sys.executable, "-c", SEED, str(NODES)], env=env, capture_output=True, text=True, check=True)
    return str(json.loads(out.stdout.strip().splitlines()[-1])["cookie"])


def _loads(page: Any, url: str, count: int) -> list[dict[str, float]]:
    found = []
    for _ in range(count):
        page.goto(url, wait_until="load")
        found.append(page.evaluate(TIMING))
    return found


def main() -> None:
    from playwright.sync_api import sync_playwright

    os.environ["VELYRIX_PROVIDER_TENANT"] = PROVIDER
    with tempfile.TemporaryDirectory(prefix="velyrix-bench-") as tmp:
        home = Path(tmp)
        cookie = _seed(home)
        pids: list[int] = []
        with bench_api.served(home, pids) as base, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.add_cookies([{"name": "velyrix_session", "value": cookie, "url": base}])
            page = context.new_page()
            results: dict[str, list[dict[str, float]]] = {}
            cpu: dict[str, float] = {}
            for label, path in (("fleet", "/console/fleet"), ("capacity", "/console/fleet/capacity")):
                _loads(page, base + path, 2)  # warm-up
                before = bench_api.cpu_s(pids[0])
                results[label] = _loads(page, base + path, LOADS)
                cpu[label] = (bench_api.cpu_s(pids[0]) - before) / LOADS
            browser.close()
    fleet = results["fleet"]
    loads = [r["load_ms"] for r in fleet]
    print(
        f"fleet grid: {NODES} nodes, {int(fleet[0]['cells'])} cells, {int(fleet[0]['elements'])} elements, "
        f"{int(fleet[0]['bytes'])} bytes, {LOADS} loads in Chromium at 1280x800"
    )
    print(
        f"navigation start -> load event: median {statistics.median(loads):.0f} ms, worst {max(loads):.0f} ms "
        f"(target < 2000 ms: {'holds' if max(loads) < 2000 else 'does not hold'})"
    )
    server = statistics.median(r["server_ms"] for r in fleet)
    print(f"server answer (request start -> first byte): median {server:.0f} ms")
    small = statistics.median(r["load_ms"] for r in results["capacity"])
    print(
        f"capacity page load: median {small:.0f} ms; ratio fleet / capacity load {statistics.median(loads) / small:.1f}"
    )
    print(
        f"server CPU per page: fleet {cpu['fleet'] * 1000:.1f} ms, capacity {cpu['capacity'] * 1000:.1f} ms "
        f"(ratio {cpu['fleet'] / max(cpu['capacity'], 1e-6):.1f})"
    )
    print(f"load average: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    main()
