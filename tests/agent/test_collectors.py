"""Collectors: sysfs InfiniBand and NVMe on fixture trees, the twin, the registry, NVML on a real GPU."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from velyrix import errors
from velyrix.agent.collectors import base, infiniband, nvme
from velyrix.agent.collectors.sim import SimCollector, SimProber
from velyrix.fleet.drivers.sim import Fault, SimRegion


def test_infiniband_collector_reads_state_rate_and_counters(ib_root: Path) -> None:
    sample = base.create("infiniband", root=ib_root, hostname="n1").collect()
    ports = {(p.device, p.port): p for p in sample.ib_ports}
    assert set(ports) == {("mlx5_0", 1), ("mlx5_1", 1)}
    up, down = ports[("mlx5_0", 1)], ports[("mlx5_1", 1)]
    assert (up.state, up.rate_gbps, down.state) == ("ACTIVE", 400.0, "DOWN")
    assert up.counters["symbol_error"] == 3 and up.counters["port_xmit_data"] == 1000
    assert sample.problems == []


def test_infiniband_collector_reports_a_garbled_counter_and_keeps_the_rest(tmp_path: Path) -> None:
    from tests.agent.conftest import write_ib_tree

    root = write_ib_tree(tmp_path, counters={"symbol_error": "oops", "link_downed": "4"})
    sample = infiniband.InfinibandCollector(root).collect()
    assert sample.ib_ports[0].counters == {"link_downed": 4}
    assert "expected an integer" in sample.problems[0]


def test_infiniband_collector_without_hcas_returns_no_ports(tmp_path: Path) -> None:
    assert infiniband.InfinibandCollector(tmp_path / "absent").collect().ib_ports == []


def test_rate_and_state_parsing() -> None:
    assert infiniband.parse_rate_gbps("200 Gb/sec (2X NDR)") == 200.0
    assert infiniband.parse_rate_gbps("garbage") is None
    assert infiniband.parse_state("4: ACTIVE") == "ACTIVE"
    assert infiniband.parse_state(None) == "UNKNOWN"


def test_nvme_collector_reads_block_bytes_and_smart_from_nvme_cli(tmp_path: Path, monkeypatch) -> None:
    ctrl = tmp_path / "nvme" / "nvme0"
    (ctrl / "nvme0n1").mkdir(parents=True)
    (ctrl / "model").write_text("SAMSUNG MZWLR3T8HCLS\n")
    # block stat: reads, merges, sectors read, ticks, writes, merges, sectors written, ...
    (ctrl / "nvme0n1" / "stat").write_text("10 0 2048 5 20 0 4096 9 0 14 14\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nvme"
    script.write_text('#!/bin/sh\necho \'{"media_errors": 2, "percent_used": 7}\'\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    drive = nvme.NvmeCollector(tmp_path / "nvme").collect().nvme[0]
    assert (drive.name, drive.model) == ("nvme0", "SAMSUNG MZWLR3T8HCLS")
    assert (drive.read_bytes, drive.written_bytes) == (2048 * 512, 4096 * 512)
    assert (drive.media_errors, drive.percent_used) == (2, 7.0)


def test_nvme_collector_without_nvme_cli_leaves_smart_fields_empty(tmp_path: Path) -> None:
    (tmp_path / "nvme1").mkdir()
    drive = nvme.NvmeCollector(tmp_path, use_nvme_cli=False).collect().nvme[0]
    assert drive.media_errors is None and drive.read_bytes is None


def test_sim_collector_reads_the_twin_with_simgpu_field_names(region: SimRegion) -> None:
    node = next(iter(region.nodes.values()))
    node.load_pct = 50.0
    region.advance(60)
    sample = SimCollector(node, region).collect()
    assert sample.hostname == node.hostname and sample.up
    assert len(sample.gpus) == 8 and len(sample.ib_ports) == len(node.ib_ports) and sample.nvme
    g = sample.gpus[0]
    assert g.utilization_pct == 50.0 and g.uuid == node.gpus[0].uuid
    assert g.energy_mj == pytest.approx(node.gpus[0].energy_mj) and g.energy_mj > 0
    for name in ("temperature_c", "power_w", "ecc_dbe_aggregate", "remap_bank_max", "nvlink_links_up"):
        assert getattr(g, name) == getattr(node.gpus[0], name)


def test_sim_collector_counts_xids_per_code(region: SimRegion) -> None:
    host, node = next(iter(region.nodes.items()))
    for _ in range(2):
        region.inject(host, Fault(kind="xid", gpu=2, xid=13))
    region.inject(host, Fault(kind="xid", gpu=2, xid=31))
    g = SimCollector(node, region).collect().gpus[2]
    assert g.xid_counts == {13: 2, 31: 1} and g.last_xid == 31


def test_sim_collector_reports_a_powered_off_node_as_down(region: SimRegion) -> None:
    node = next(iter(region.nodes.values()))
    node.powered = False
    sample = SimCollector(node).collect()
    assert not sample.up and sample.gpus == []


def test_sim_prober_measures_a_slow_gpu_below_its_peers(region: SimRegion) -> None:
    host, node = next(iter(region.nodes.items()))
    region.inject(host, Fault(kind="slow_gpu", gpu=1, factor=0.5))
    prober = SimProber(node)
    assert prober.run_gemm(1) < 0.75 * prober.run_gemm(0)
    assert prober.run_memtest(0) > 0
    with pytest.raises(errors.InvalidInputError):
        prober.run_gemm(8)


def test_unknown_collector_name_suggests_the_closest() -> None:
    with pytest.raises(errors.UnknownNameError) as info:
        base.create("infinband")
    assert info.value.suggestion == "infiniband"


def test_host_collector_merges_partial_collectors(ib_root: Path, region: SimRegion) -> None:
    node = next(iter(region.nodes.values()))
    host = base.HostCollector([SimCollector(node), infiniband.InfinibandCollector(ib_root)], hostname="n9")
    sample = host.collect()
    assert sample.hostname == "n9" and len(sample.gpus) == 8
    assert {p.device for p in sample.ib_ports} >= {"mlx5_0", "mlx5_1"}


def test_nvml_collector_without_a_driver_says_so() -> None:
    from velyrix.agent.collectors import nvml

    try:
        collector = nvml.NvmlCollector()
    except errors.NvmlUnavailableError as exc:
        assert "sim" in (exc.hint or "")
    else:  # a machine with a GPU: the collector must work instead
        assert collector.collect().gpus
        collector.close()


@pytest.mark.gpu
def test_nvml_collector_reads_every_gpu_of_this_machine() -> None:
    from velyrix.agent.collectors import nvml

    try:
        collector = nvml.NvmlCollector()
    except errors.NvmlUnavailableError as exc:
        pytest.skip(exc.message)
    sample = collector.collect()
    collector.close()
    assert sample.gpus, "NVML initialized but reported no GPU"
    for g in sample.gpus:
        assert g.uuid.startswith("GPU-") and g.responsive
        assert g.temperature_c is not None and 0 < g.temperature_c < 110
        assert g.power_w is not None and g.power_w > 0
        assert g.fb_used_mib is not None and g.fb_free_mib is not None
        assert g.sm_clock_mhz is not None and g.utilization_pct is not None
    print("NVML sample:", sample.to_dict())  # recorded in docs/benchmarks.md when run on a device


@pytest.mark.gpu
def test_nvml_profiling_fields_on_a_real_hopper_gpu() -> None:
    """dcgm-exporter's PROF defaults through NVML GPM: two collections a second apart give ratios in [0, 1]
    and PCIe rates >= 0 on Hopper and later; the PCI bus id and driver version label every GPU."""
    import time

    from velyrix.agent.collectors import nvml

    try:
        collector = nvml.NvmlCollector()
    except errors.NvmlUnavailableError as exc:
        pytest.skip(exc.message)
    collector.collect()
    time.sleep(1.0)
    sample = collector.collect()
    collector.close()
    for g in sample.gpus:
        assert g.pci_bus_id and g.driver_version
        if "H100" in g.name or "H200" in g.name or "B200" in g.name:
            for value in (g.gr_engine_active, g.pipe_tensor_active, g.dram_active):
                assert value is not None and 0.0 <= value <= 1.0, sample.problems
            assert g.pcie_tx_bytes_per_s is not None and g.pcie_tx_bytes_per_s >= 0
    print("NVML profiling:", [(g.index, g.gr_engine_active, g.pipe_tensor_active, g.dram_active) for g in sample.gpus])
