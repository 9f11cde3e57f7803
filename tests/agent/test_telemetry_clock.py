"""Telemetry of the twin is physically consistent at any clock speed (docs/telemetry.md "Clocks").

A real Prometheus scrapes the twin at ``--speed`` 1, 60 and 240 through every exposition path (the fleet
exporter, the per-node targets, an agent on a ``sim`` collector, an agent on the ``twin`` collector of a
running ``velyrix up``): the rates it computes of InfiniBand bytes stay at or under line rate (and equal
the twin's modelled traffic), the energy counter's rate equals the reported power within 2%, and the
sample timestamp is on Prometheus's (wall) clock.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from velyrix.agent import service, wall_rates
from velyrix.agent.collectors.base import GPUReading, IBPortReading, NodeSample
from velyrix.agent.collectors.sim import SimCollector, twin_telemetry
from velyrix.agent.collectors.twin import TwinCollector
from velyrix.agent.fleet_exporter import fleet_source
from velyrix.agent.fleet_targets import FleetServer, FleetTargets
from velyrix.fleet.drivers.sim import SimClock, SimRegion
from velyrix.fleet.drivers.sim.devices import SimIBPort
from velyrix.testing.prometheus import PrometheusServer, prometheus_binary

SPEEDS = (1.0, 60.0, 240.0)
INTERVAL_S = 0.5
WINDOW_S = 6
TRAFFIC_SHARE = 0.5  # of line rate per direction at 100% load: the twin's model (SimIBPort.step)


def test_a_clock_jump_adds_one_wall_second_of_flow_not_a_day() -> None:
    counters = wall_rates.WallClockCounters()

    def sample(sim_s: float, energy_mj: float, words: int, dbe: int) -> NodeSample:
        gpu = GPUReading(index=0, uuid="GPU-0", power_w=700.0, energy_mj=energy_mj, ecc_dbe_volatile=dbe)
        port = IBPortReading("mlx5_0", 1, "ACTIVE", 400.0, {"port_xmit_data": words, "symbol_error": dbe})
        return NodeSample(hostname="n0", collected_at_s=sim_s, gpus=[gpu], ib_ports=[port])

    first = counters.present(sample(0.0, 5.0e6, 1000, 0), wall_s=1000.0)
    # one simulated day at 700 W and 200 Gb/s per direction, read one wall second later; 3 DBEs meanwhile
    day = 86400.0
    words_per_s = 400e9 / 8 * TRAFFIC_SHARE / 4
    later = counters.present(sample(day, 5.0e6 + 700.0e3 * day, 1000 + int(words_per_s * day), 3), wall_s=1001.0)
    assert first.gpus[0].energy_mj == 5.0e6 and first.collected_at_s == 1000.0
    assert later.gpus[0].energy_mj - 5.0e6 == pytest.approx(700.0e3, rel=1e-6)  # 700 W x 1 wall s, in mJ
    assert later.ib_ports[0].counters["port_xmit_data"] - 1000 == pytest.approx(words_per_s, rel=1e-6)
    assert later.gpus[0].ecc_dbe_volatile == 3 and later.ib_ports[0].counters["symbol_error"] == 3  # events: as is
    assert later.collected_at_s == 1001.0
    reset = counters.present(sample(day + 1, 10.0, 5, 0), wall_s=1002.0)  # a replaced board starts over
    assert reset.gpus[0].energy_mj == 10.0 and reset.ib_ports[0].counters["port_xmit_data"] == 5


@pytest.fixture(scope="module")
def twins() -> Iterator[tuple[dict[float, SimRegion], PrometheusServer]]:
    """Per speed: a twin of four nodes at full load, scraped through the four exposition paths."""
    regions: dict[float, SimRegion] = {}
    servers: list[service.MetricsServer] = []
    fleets: list[FleetServer] = []
    targets: dict[str, list[str]] = {}
    http_sd: dict[str, tuple[str, int]] = {}
    try:
        for speed in SPEEDS:
            region = SimRegion.build("us-east-1", {"hgx-h200-8g": 4}, seed=13, clock=SimClock(speed=speed))
            for node in region.nodes.values():
                node.load_pct = 100.0
            region.advance(0.0)
            regions[speed] = region
            h0, h1, h2, _ = region.nodes
            twin = TwinCollector(h2, lambda h, r=region: twin_telemetry(r, h))
            exporters = {
                "fleet": fleet_source(region, hostnames=[h0]),
                "agent-sim": service.MetricsSource([service.NodeSource(SimCollector(region.nodes[h1], region))]),
                "agent-twin": service.MetricsSource([service.NodeSource(twin)]),
            }
            for path, source in exporters.items():
                server = service.serve(source)
                servers.append(server)
                targets[f"velyrix-x{int(speed)}-{path}"] = [f"127.0.0.1:{server.port}"]
            # per-node targets read the counters where the region's advancer left them, up to advance_every_s
            # before the scrape: a rate over W seconds is exact to advance_every_s / W (docs/telemetry.md)
            fleet = FleetServer(FleetTargets(region, advance_every_s=0.05))
            fleets.append(fleet)
            http_sd[f"velyrix-x{int(speed)}-per-node"] = (fleet.sd_url, len(region.nodes))
        prom = PrometheusServer(targets, http_sd=http_sd, interval_s=INTERVAL_S)
        prom.start()
        try:
            time.sleep(WINDOW_S + 3 * INTERVAL_S)  # a full rate window of scrapes on every target
            yield regions, prom
        finally:
            prom.stop()
    finally:
        for s in servers:
            s.close()
        for f in fleets:
            f.close()


def _jobs(speed: float) -> set[str]:
    return {f"velyrix-x{int(speed)}-{p}" for p in ("fleet", "agent-sim", "agent-twin", "per-node")}


@pytest.mark.prometheus
@pytest.mark.skipif(prometheus_binary() is None, reason="apt-get install prometheus")
@pytest.mark.parametrize("speed", SPEEDS)
def test_ib_byte_rates_stay_at_or_under_line_rate(twins, speed: float) -> None:
    _, prom = twins
    for direction in ("xmit", "rcv"):
        share = prom.query_by(
            f"max by (job) (rate(velyrix_ib_port_{direction}_data_bytes_total[{WINDOW_S}s]) * 8"
            " / on (job, Hostname, device, port) (velyrix_ib_port_rate_gbps * 1e9))",
            "job",
        )
        mine = {j: v for j, v in share.items() if j in _jobs(speed)}
        assert set(mine) == _jobs(speed), share
        for job, value in mine.items():
            assert value <= 1.0, f"{job}: {direction} at {value:.1f}x line rate"
            assert value == pytest.approx(TRAFFIC_SHARE, rel=0.02), f"{job}: {direction} at {value:.3f} of line"


@pytest.mark.prometheus
@pytest.mark.skipif(prometheus_binary() is None, reason="apt-get install prometheus")
@pytest.mark.parametrize("speed", SPEEDS)
def test_energy_rate_equals_reported_power(twins, speed: float) -> None:
    _, prom = twins
    ratio = prom.query(
        f"rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[{WINDOW_S}s]) / 1000"
        " / on (job, Hostname, gpu) DCGM_FI_DEV_POWER_USAGE"
    )
    mine = [r for r in ratio if r["metric"]["job"] in _jobs(speed)]
    per_node_gpus = 4 * 8
    assert len(mine) == 3 * 8 + per_node_gpus, sorted({r["metric"]["job"] for r in ratio})
    for r in mine:
        assert float(r["value"][1]) == pytest.approx(1.0, rel=0.02), r["metric"]


@pytest.mark.prometheus
@pytest.mark.skipif(prometheus_binary() is None, reason="apt-get install prometheus")
@pytest.mark.parametrize("speed", SPEEDS)
def test_sample_timestamps_are_on_the_wall_clock(twins, speed: float) -> None:
    _, prom = twins
    age = prom.query_by("max by (job) (time() - velyrix_node_sample_timestamp_seconds)", "job")
    mine = {j: v for j, v in age.items() if j in _jobs(speed)}
    assert set(mine) == _jobs(speed)
    assert all(-1.0 < v < 10.0 for v in mine.values()), mine  # seconds, not a simulated day ahead or behind


def test_the_twin_port_model_is_half_of_line_rate_at_full_load() -> None:
    """The figure the rate checks compare with is the twin's (not a constant of the test)."""
    port = SimIBPort("mlx5_0", 1, "ACTIVE", 400)
    port.step(10.0, 100.0)
    assert port.counters["port_xmit_data"] * 4 * 8 / 10.0 == pytest.approx(400e9 * TRAFFIC_SHARE)
