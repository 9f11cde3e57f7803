"""The digital twin: layout from the catalog, determinism, counters, faults and their precursors."""

from __future__ import annotations

import pytest

from velyrix import errors
from velyrix.catalog import reader
from velyrix.fleet.drivers.sim import Fault, SimClock, SimRegion
from velyrix.fleet.drivers.sim.devices import IB_COUNTERS


def test_region_follows_catalog_layout(region: SimRegion) -> None:
    assert len(region.nodes) == 64
    first, last = region.node("use1-h200-su00-n00"), region.node("use1-h200-su01-n31")
    assert first.position is not None and last.position is not None
    assert (first.position.su, last.position.su) == (0, 1)
    assert [lp.port for lp in last.position.leaf_ports] == [32] * 8
    assert [lp.rail for lp in first.position.leaf_ports] == list(range(8))
    assert first.firmware == reader.region("us-east-1").firmware_baseline
    assert region.spares == {"hgx-h200-8g": 4}  # ceil(64 * 0.05)
    gpu = first.gpus[0]
    assert gpu.uuid.startswith("GPU-") and gpu.name == "H200-SXM5-141GB" and gpu.nvlink_links_up == 18
    assert [p.device for p in first.ib_ports] == [f"mlx5_{i}" for i in range(8)]
    assert set(first.ib_ports[0].counters) == set(IB_COUNTERS)
    assert len(first.nvme) == 8


def test_default_region_has_catalog_capacity() -> None:
    sim = SimRegion.build("eu-west-1")
    assert len(sim.nodes) == sum(reader.region("eu-west-1").capacity.values())


def test_same_seed_same_twin_other_seed_other_twin() -> None:
    def fingerprint(seed: int) -> list[tuple[str, str, float]]:
        sim = SimRegion.build("us-east-1", {"hgx-h100-8g": 8}, seed=seed)
        return [(g.uuid, g.serial, g.bf16_tflops_measured) for n in sim.nodes.values() for g in n.gpus]

    assert fingerprint(3) == fingerprint(3)
    assert fingerprint(3) != fingerprint(4)


def test_unknown_node_type_and_host_suggest_closest(region: SimRegion) -> None:
    with pytest.raises(errors.UnknownNameError) as bad_type:
        SimRegion.build("us-east-1", {"hgx-h200-8": 2})
    assert "hgx-h200-8g" in (bad_type.value.hint or "")
    with pytest.raises(errors.UnknownNameError) as info:
        region.node("use1-h200-su00-n0")
    assert info.value.suggestion is not None


def test_advance_moves_counters_under_load(region: SimRegion) -> None:
    node = region.node("use1-h200-su00-n01")
    node.load_pct = 100.0
    region.advance(60.0)
    gpu = node.gpus[0]
    assert region.clock.now() == 60.0
    assert gpu.utilization_pct == 100.0 and gpu.power_w == pytest.approx(700.0)
    assert gpu.energy_mj == pytest.approx(700.0 * 60 * 1000)
    assert gpu.temperature_c > 60 and gpu.fb_used_mib > 0
    assert node.ib_ports[0].counters["port_xmit_data"] > 0
    idle = region.node("use1-h200-su00-n02").gpus[0]
    assert idle.utilization_pct == 0.0 and idle.sm_clock_mhz == 345


def test_accelerated_clock_runs_faster_than_wall_time() -> None:
    clock = SimClock(speed=1000.0)
    import time

    t0 = clock.now()
    time.sleep(0.01)
    assert clock.now() - t0 >= 9.0


@pytest.mark.parametrize(
    "fault,check",
    [
        (Fault("xid", gpu=2, xid=79), lambda n: not n.gpus[2].responsive and n.gpus[2].xid_events[-1][1] == 79),
        (Fault("ecc_dbe", gpu=1), lambda n: n.gpus[1].ecc_dbe_volatile == 1 and n.gpus[1].remap_pending),
        (Fault("ecc_sbe_storm"), lambda n: n.gpus[0].ecc_sbe_volatile >= 50_000),
        (Fault("slow_gpu", gpu=4), lambda n: n.gpus[4].bf16_tflops_measured < 0.7 * n.gpus[3].bf16_tflops_measured),
        (
            Fault("ib_down", port=5),
            lambda n: n.ib_ports[5].state == "DOWN" and n.ib_ports[5].counters["link_downed"] == 1,
        ),
        (Fault("slow_disk", drive=3), lambda n: n.nvme[3].read_gb_s_measured < 0.5 * n.nvme[2].read_gb_s_measured),
        (Fault("remap_failure", gpu=6), lambda n: n.gpus[6].remap_failure and n.gpus[6].xid_events[-1][1] == 64),
        (Fault("nvlink", gpu=7), lambda n: n.gpus[7].nvlink_links_up == 17 and n.gpus[7].nvlink_crc_errors > 0),
        (Fault("thermal"), lambda n: n.gpus[0].throttle_reasons & 0x40 and n.gpus[0].temperature_c > 80),
    ],
)
def test_each_fault_kind_shows_in_the_counters(region: SimRegion, fault: Fault, check) -> None:  # type: ignore[no-untyped-def]
    region.inject("use1-h200-su00-n03", fault)
    assert check(region.node("use1-h200-su00-n03"))
    assert region.events[-1].fault == fault


def test_bad_faults_are_rejected_clearly(region: SimRegion) -> None:
    with pytest.raises(errors.UnknownNameError, match="fault kind"):
        Fault("ecc_dbee")
    with pytest.raises(errors.InvalidInputError, match="xid"):
        Fault("xid")
    with pytest.raises(errors.InvalidInputError, match="GPUs 0-7"):
        region.inject("use1-h200-su00-n00", Fault("slow_gpu", gpu=8))


def test_precursor_sbe_rises_before_the_dbe(region: SimRegion) -> None:
    gpu = region.node("use1-h200-su00-n04").gpus[3]
    region.inject("use1-h200-su00-n04", Fault("ecc_dbe", gpu=3), precursor_s=3 * 3600)
    region.advance(3600)
    first = gpu.ecc_sbe_volatile
    region.advance(3600)
    assert 0 < first < gpu.ecc_sbe_volatile and gpu.ecc_dbe_volatile == 0
    region.advance(3600)
    assert gpu.ecc_dbe_volatile == 1
    assert [e.kind for e in region.events] == ["precursor", "fault"]


def test_precursor_remaps_before_remap_failure(region: SimRegion) -> None:
    gpu = region.node("use1-h200-su00-n05").gpus[0]
    region.inject("use1-h200-su00-n05", Fault("remap_failure"), precursor_s=4 * 3600)
    region.advance(3 * 3600)
    assert gpu.remapped_rows_uncorrectable >= 3 and not gpu.remap_failure
    region.advance(3600)
    assert gpu.remap_failure and gpu.remap_bank_max == 8


def test_precursor_link_errors_before_the_link_drops(region: SimRegion) -> None:
    port = region.node("use1-h200-su00-n06").ib_ports[2]
    region.inject("use1-h200-su00-n06", Fault("ib_down", port=2), precursor_s=2 * 3600)
    region.advance(3600)
    assert port.state == "ACTIVE" and port.counters["symbol_error"] > 0
    region.advance(3600)
    assert port.state == "DOWN"


def test_spontaneous_faults_follow_the_catalog_rate_deterministically() -> None:
    def run(seed: int) -> list[tuple[float, str, str]]:
        sim = SimRegion.build("us-east-1", {"hgx-h200-8g": 256}, seed=seed)
        sim.enable_spontaneous()
        sim.advance(100 * 86400.0)
        return [(e.at_s, e.hostname, e.kind) for e in sim.events]

    events = run(11)
    assert events == run(11)
    # 256 nodes x 100 days x 6.5 / 1000 = 166 expected interruptions (first occurrences + precursors)
    starts = [e for e in events if e[2] == "precursor"] + [e for e in events if e[2] == "fault"]
    assert 100 < len({(t, h) for t, h, _ in starts}) < 400


def test_spontaneous_precursor_causes_warn_first() -> None:
    sim = SimRegion.build("us-east-1", {"hgx-h200-8g": 256}, seed=5)
    sim.enable_spontaneous(precursor_window_s=3600.0)
    sim.advance(200 * 86400.0)
    precursors = [e for e in sim.events if e.kind == "precursor"]
    assert precursors and all(e.cause is not None for e in precursors)
    fired = [e for e in sim.events if e.kind == "fault" and e.cause is None]
    for e in fired:  # every precursor-led fault comes after its precursor on the same host
        assert any(p.hostname == e.hostname and p.fault == e.fault and p.at_s < e.at_s for p in precursors)


def test_repair_restores_a_failed_node(region: SimRegion) -> None:
    region.inject("use1-h200-su00-n07", Fault("xid", gpu=0, xid=79))
    region.inject("use1-h200-su00-n07", Fault("ib_down", port=0))
    region.repair("use1-h200-su00-n07")
    node = region.node("use1-h200-su00-n07")
    assert node.gpus[0].responsive and node.gpus[0].bf16_tflops_measured > 700 and node.ib_ports[0].state == "ACTIVE"


def test_idle_nodes_accumulate_energy_and_wake_up_on_load(region: SimRegion) -> None:
    node = region.node("use1-h200-su01-n00")
    region.advance(10.0)
    gpu = node.gpus[0]
    before = gpu.energy_mj
    region.advance(100.0)
    assert gpu.energy_mj == pytest.approx(before + gpu.power_w * 100.0 * 1000)
    node.load_pct = 100.0
    region.advance(1.0)
    assert gpu.utilization_pct == 100.0 and gpu.power_w == pytest.approx(700.0)
    node.load_pct = 0.0
    region.advance(1.0)
    assert gpu.utilization_pct == 0.0 and gpu.sm_clock_mhz == 345
    node.powered = False
    off = gpu.energy_mj
    region.advance(100.0)
    assert gpu.energy_mj == off


def test_state_survives_a_rebuild_from_the_same_seed(region: SimRegion) -> None:
    node = region.node("use1-h200-su00-n09")
    node.image, node.networks, node.mounts, node.tenant_data = "img", {"vlan": 1001, "pkey": 3}, ["vol-1"], True
    region.advance(500.0)
    again = SimRegion.build("us-east-1", {"hgx-h200-8g": 64}, seed=7)
    again.restore(region.state())
    twin = again.node("use1-h200-su00-n09")
    assert (twin.image, twin.networks, twin.mounts, twin.tenant_data) == (
        "img",
        {"vlan": 1001, "pkey": 3},
        ["vol-1"],
        True,
    )
    assert again.clock.now() == 500.0 and again.node("use1-h200-su00-n08").image is None
