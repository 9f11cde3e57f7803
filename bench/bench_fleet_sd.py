"""A twin region under a real Prometheus with HTTP service discovery: one target per node.

``velyrix sim exporter --per-node`` (``agent.fleet_targets``) in this process; Prometheus discovers the
nodes at ``/sd`` and scrapes each at ``/nodes/<host>/metrics``. After every target has been scraped
twice: how many are up, the distribution of ``scrape_duration_seconds`` over targets (target: every
one under 100 ms), series per scrape, and the exporter's resident memory (target: under 1 GB).

``VELYRIX_BENCH_FLEET_NODES`` sets the node count (default 10,000); ``VELYRIX_BENCH_FLEET_INTERVAL_S``
the scrape interval (default 60 s: 10,000 scrapes per minute).
"""

from __future__ import annotations

import os
import time

import httpx

from velyrix import errors
from velyrix.agent.fleet_targets import FleetServer, FleetTargets
from velyrix.fleet.drivers.sim import SimClock, SimRegion
from velyrix.testing.prometheus import PrometheusServer

NODES = int(os.environ.get("VELYRIX_BENCH_FLEET_NODES", "10000"))
INTERVAL_S = float(os.environ.get("VELYRIX_BENCH_FLEET_INTERVAL_S", "60"))


def rss_mib() -> float:
    """Resident memory of this process (the exporter), MiB, from /proc."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _request_path(targets: FleetTargets, server: FleetServer, count: int = 200) -> None:
    """In the same run: one node's rendering (what a scrape used to cost) against one scrape over loopback HTTP
    of a cached rendering (what it costs now), both wall ms per node, sequentially."""
    hosts = list(targets.region.nodes)[:count]
    start = time.perf_counter()
    for h in hosts:
        targets.render_node(h)
    render_ms = (time.perf_counter() - start) / count * 1000
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}") as http:
        start = time.perf_counter()
        for h in hosts:
            http.get(f"/nodes/{h}/metrics").raise_for_status()
        scrape_ms = (time.perf_counter() - start) / count * 1000
    print(
        f"one node rendered: {render_ms:.2f} ms; one cached scrape over HTTP: {scrape_ms:.2f} ms "
        f"(ratio {render_ms / scrape_ms:.1f}x); load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def main() -> None:
    start = time.perf_counter()
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": NODES}, seed=1, clock=SimClock(speed=1.0))
    for node in region.nodes.values():
        node.load_pct = 60.0
    print(f"twin of {NODES:,} nodes built in {time.perf_counter() - start:.1f} s; exporter RSS {rss_mib():,.0f} MiB")
    # each node rendered once per scrape interval by the worker (what rendering on request cost); scrapes
    # serve the last rendering (agent.fleet_targets)
    targets = FleetTargets(region, advance_every_s=INTERVAL_S, refresh_s=INTERVAL_S)
    server = FleetServer(targets)
    targets.warm.wait()
    print(
        f"every node rendered once in {time.perf_counter() - start:.1f} s since start; load average {os.getloadavg()}"
    )
    _request_path(targets, server)
    prom = PrometheusServer(
        {}, interval_s=INTERVAL_S, scrape_timeout_s=10.0, http_sd={"velyrix-nodes": (server.sd_url, NODES)}
    )
    try:
        try:
            prom.start(timeout_s=INTERVAL_S * 3 + 120)
        except errors.ExternalToolError as exc:  # not every target up yet: measure what there is anyway
            if prom.proc is None or prom.proc.poll() is not None:
                raise
            print(f"not every target up within the start timeout: {str(exc)[:120]}...")
        cpu0, wall0 = sum(os.times()[:2]), time.perf_counter()
        time.sleep(INTERVAL_S * 1.2)  # a second full round of scrapes
        cpu_share = (sum(os.times()[:2]) - cpu0) / (time.perf_counter() - wall0)
        up = prom.query('count(up{job="velyrix-nodes"} == 1)')
        total = prom.query('count(up{job="velyrix-nodes"})')
        q = {
            p: prom.query(f'quantile({p}, scrape_duration_seconds{{job="velyrix-nodes"}})')
            for p in ("0.5", "0.99", "1")
        }
        series = prom.query('avg(scrape_samples_scraped{job="velyrix-nodes"})')
        print(f"targets up: {up[0]['value'][1] if up else 0} of {total[0]['value'][1] if total else 0}")
        for p, r in q.items():
            print(f"scrape_duration_seconds quantile {p}: {float(r[0]['value'][1]) * 1000:.1f} ms")
        print(f"samples per scrape: {float(series[0]['value'][1]):.0f}")
        slow = prom.query('count(scrape_duration_seconds{job="velyrix-nodes"} > 0.1)')
        print(f"targets whose last scrape took over 100 ms: {slow[0]['value'][1] if slow else 0}")
        rounds = f"{targets.last_round_s:.1f} s" if targets.last_round_s else "-"
        print(f"exporter CPU over the round: {cpu_share:.2f} cores; last rendering round {rounds}")
        print(f"load average at the end: {os.getloadavg()}")
        print(f"exporter RSS after two rounds: {rss_mib():,.0f} MiB (target < 1,024)")
    finally:
        prom.stop()
        server.close()


if __name__ == "__main__":
    main()
