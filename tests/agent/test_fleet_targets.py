"""The twin scraped like real agents: Prometheus discovers one target per node over HTTP SD and scrapes
each node's own small exposition."""

from __future__ import annotations

import time

import httpx
import pytest

from velyrix.agent.collectors.sim import region_lock
from velyrix.agent.fleet_targets import FleetServer, FleetTargets
from velyrix.fleet.drivers.sim import SimClock, SimRegion
from velyrix.testing.prometheus import PrometheusServer, prometheus_binary


@pytest.fixture()
def fleet():
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 6}, seed=5, clock=SimClock(speed=1.0))
    server = FleetServer(FleetTargets(region, advance_every_s=0.2))
    try:
        yield region, server
    finally:
        server.close()


def test_sd_lists_one_target_per_node_and_each_path_serves_that_node(fleet) -> None:
    region, server = fleet
    groups = httpx.get(server.sd_url).json()
    assert sorted(g["labels"]["Hostname"] for g in groups) == sorted(region.nodes)
    assert all(g["targets"] == [f"127.0.0.1:{server.port}"] for g in groups)
    host = groups[0]["labels"]["Hostname"]
    body = httpx.get(f"http://127.0.0.1:{server.port}{groups[0]['labels']['__metrics_path__']}").text
    hosts = {line.split('Hostname="', 1)[1].split('"', 1)[0] for line in body.splitlines() if 'Hostname="' in line}
    assert hosts == {host} and body.count("DCGM_FI_DEV_GPU_UTIL{") == 8
    assert httpx.get(f"http://127.0.0.1:{server.port}/nodes/nope/metrics").status_code == 404
    assert httpx.get(f"http://127.0.0.1:{server.port}/metrics").status_code == 404


@pytest.mark.prometheus
@pytest.mark.skipif(prometheus_binary() is None, reason="apt-get install prometheus")
def test_prometheus_discovers_and_scrapes_every_node(fleet) -> None:
    region, server = fleet
    for node in region.nodes.values():
        node.load_pct = 50.0
    with PrometheusServer({}, interval_s=1.0, http_sd={"velyrix-nodes": (server.sd_url, len(region.nodes))}) as prom:
        up = prom.query('up{job="velyrix-nodes"}')
        assert len(up) == 6 and all(r["value"][1] == "1" for r in up)
        assert sorted(r["metric"]["Hostname"] for r in up) == sorted(region.nodes)
        per_node = prom.query_by("count by (Hostname) (DCGM_FI_DEV_GPU_UTIL)", "Hostname")
        assert per_node == dict.fromkeys(region.nodes, 8.0)


def test_a_scrape_answers_while_the_region_is_locked_and_later_shows_new_readings(fleet) -> None:
    """Scrapes serve each node's last rendering: one arriving during a long advance of the region (its locks
    held) still answers at once, and the worker's next round brings the node's new state."""
    region, server = fleet
    assert server.targets.warm.wait(30)
    host = next(iter(region.nodes))
    url = f"http://127.0.0.1:{server.port}/nodes/{host}/metrics"
    with region_lock(region), region.lock:  # what advancing 10,000 nodes holds for seconds
        locked = httpx.get(url, timeout=5)
    assert locked.status_code == 200 and f'Hostname="{host}"' in locked.text
    region.nodes[host].load_pct = 100.0

    def util() -> set[str]:
        lines = httpx.get(url).text.splitlines()
        return {line.rsplit(" ", 1)[1] for line in lines if line.startswith("DCGM_FI_DEV_GPU_UTIL{")}

    deadline = time.monotonic() + 30
    while util() != {"100.0"}:
        assert time.monotonic() < deadline, util()
        time.sleep(0.1)
