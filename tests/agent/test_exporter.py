"""Exporter: DCGM names and types, per-job labels with bounded cardinality, XID counts, IB bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from velyrix import errors
from velyrix.agent import exporter, jobs
from velyrix.agent.collectors.base import GPUReading, NodeSample
from velyrix.agent.collectors.infiniband import InfinibandCollector
from velyrix.agent.collectors.sim import read_node
from velyrix.fleet.drivers.sim import Fault, SimRegion


def parse(body: bytes) -> dict[str, object]:
    """Families by name, through prometheus_client's parser (which also checks the syntax)."""
    return {f.name: f for f in text_string_to_metric_families(body.decode())}


_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_PAIR = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(body: bytes, name: str) -> list[tuple[dict[str, str], float]]:
    """Samples of ``name`` exactly as exposed (prometheus_client's parser renames DCGM's counters)."""
    out = []
    for line in body.decode().splitlines():
        m = _LINE.match(line)
        if m and m.group(1) == name:
            labels = {
                k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                for k, v in _PAIR.findall(m.group(2) or "")
            }
            out.append((labels, float(m.group(3))))
    return out


def test_dcgm_names_and_types_follow_dcgm_exporter(region: SimRegion) -> None:
    node = next(iter(region.nodes.values()))
    node.load_pct = 80
    region.advance(30)
    body = exporter.render([(read_node(node), jobs.JobMap())])
    text = body.decode()
    # dcgm-exporter's counters keep their names (no _total suffix) and are typed counter
    assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n" in text
    assert "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n" in text
    assert "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n" in text
    util = samples(body, "DCGM_FI_DEV_GPU_UTIL")
    assert len(util) == 8 and all(v == 80.0 for _, v in util)
    labels = util[0][0]
    assert set(labels) == {
        "gpu",
        "UUID",
        "pci_bus_id",
        "device",
        "modelName",
        "Hostname",
        "DCGM_FI_DRIVER_VERSION",
        "hpc_job",
    }
    assert labels["Hostname"] == node.hostname and labels["modelName"] == node.gpus[0].name
    assert labels["hpc_job"] == ""
    energy = {lab["gpu"]: v for lab, v in samples(body, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")}
    assert energy["0"] == pytest.approx(node.gpus[0].energy_mj)


def test_every_rendered_metric_is_declared(region: SimRegion, ib_root: Path, tmp_path: Path) -> None:
    jobs.write_prolog(tmp_path, "77", [0], user="ada", team="ml", cost_center="cc-1")
    node = next(iter(region.nodes.values()))
    sample = read_node(node)
    sample.ib_ports += InfinibandCollector(ib_root).collect().ib_ports
    sample.nvme[0].read_bytes = 10
    sample.gpus[0].throttle_reasons = 0x40
    region.inject(node.hostname, Fault(kind="xid", gpu=0, xid=79))
    names = set(parse(exporter.render([(read_node(node), jobs.read_job_map(tmp_path))])))
    names |= set(parse(exporter.render([(sample, jobs.JobMap())])))
    # the parser strips _total from counters
    declared = {n[:-6] if n.endswith("_total") else n for n in exporter.exported_metric_names()}
    assert names <= declared
    assert {"velyrix_gpu_xid_errors", "velyrix_job_info", "velyrix_ib_port_link_downed"} <= names


def test_xid_counts_are_a_counter_with_an_xid_label(region: SimRegion) -> None:
    host, node = next(iter(region.nodes.items()))
    for xid in (13, 13, 79):
        region.inject(host, Fault(kind="xid", gpu=3, xid=xid))
    body = exporter.render([(read_node(node), jobs.JobMap())])
    counts = {(lab["gpu"], lab["xid"]): v for lab, v in samples(body, "velyrix_gpu_xid_errors_total")}
    assert counts == {("3", "13"): 2.0, ("3", "79"): 1.0}
    last = {lab["gpu"]: v for lab, v in samples(body, "DCGM_FI_DEV_XID_ERRORS")}
    assert last["3"] == 79.0 and last["0"] == 0.0
    assert "# TYPE velyrix_gpu_xid_errors_total counter" in body.decode()
    # dcgm-exporter's XID counter, same counts under its name
    exp = {(lab["gpu"], lab["xid"]): v for lab, v in samples(body, "DCGM_EXP_XID_ERRORS_COUNT")}
    assert exp == counts and "# TYPE DCGM_EXP_XID_ERRORS_COUNT counter" in body.decode()


def test_job_mapping_labels_gpus_and_the_epilog_removes_them(region: SimRegion, tmp_path: Path) -> None:
    node = next(iter(region.nodes.values()))
    jobs.write_prolog(tmp_path, "4242", [0, 1, 2, 3], user="ada", team="ml", cost_center="cc-100")
    jobs.write_prolog(tmp_path, "4243", [3], user="bo", team="vision")
    body = exporter.render([(read_node(node), jobs.read_job_map(tmp_path))])
    by_gpu: dict[str, set[str]] = {}
    for lab, _ in samples(body, "DCGM_FI_DEV_GPU_UTIL"):
        by_gpu.setdefault(lab["gpu"], set()).add(lab["hpc_job"])
    assert by_gpu["0"] == {"4242"} and by_gpu["3"] == {"4242", "4243"} and by_gpu["7"] == {""}
    info = {lab["hpc_job"]: lab for lab, _ in samples(body, "velyrix_job_info")}
    assert info["4242"]["team"] == "ml" and info["4242"]["cost_center"] == "cc-100"
    assert info["4243"]["user"] == "bo" and info["4243"]["cost_center"] == ""
    jobs.remove_epilog(tmp_path, "4242")
    jobs.remove_epilog(tmp_path, "4243")
    after = exporter.render([(read_node(node), jobs.read_job_map(tmp_path))])
    assert {lab["hpc_job"] for lab, _ in samples(after, "DCGM_FI_DEV_GPU_UTIL")} == {""}
    assert samples(after, "velyrix_job_info") == []
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["jobs"]


def test_job_map_keeps_cardinality_bounded(tmp_path: Path) -> None:
    (tmp_path / "0").write_text("ok-1\n" + "bad id with spaces\n")
    (tmp_path / "1").write_text("\n".join(f"j{i}" for i in range(10)))
    (tmp_path / "notes.txt").write_text("ignored")
    mapping = jobs.read_job_map(tmp_path, max_jobs_per_gpu=4)
    assert mapping.jobs_of(0) == ["ok-1"]
    assert mapping.jobs_of(1) == ["j0", "j1", "j2", "j3"]
    assert any("exporting the first 4" in p for p in mapping.problems)
    assert jobs.read_job_map(tmp_path / "absent").gpu_jobs == {}


def test_job_map_rejects_invalid_ids_and_long_values(tmp_path: Path) -> None:
    (tmp_path / "0").write_text('j"1\n' + "x" * 80 + "\nfine\n")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "fine.json").write_text('{"team": "' + "t" * 200 + '"}')
    mapping = jobs.read_job_map(tmp_path)
    assert mapping.jobs_of(0) == ["fine"] and len(mapping.problems) == 2
    assert len(mapping.info["fine"].team) == jobs.MAX_VALUE_CHARS


def test_prolog_refuses_bad_input(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidInputError):
        jobs.write_prolog(tmp_path, "bad id", [0])
    with pytest.raises(errors.UnknownNameError) as info:
        jobs.write_prolog(tmp_path, "ok", [0], tema="ml")
    assert info.value.suggestion == "team"


def test_throttle_reasons_become_one_series_per_reason() -> None:
    sample = NodeSample(hostname="n1", gpus=[GPUReading(index=0, uuid="GPU-x", throttle_reasons=0x40 | 0x4)])
    body = exporter.render([(sample, jobs.JobMap())])
    active = {lab["reason"]: v for lab, v in samples(body, "velyrix_gpu_throttle_active")}
    assert active["hw_thermal"] == 1.0 and active["sw_power_cap"] == 1.0 and active["sw_thermal"] == 0.0
    assert samples(body, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")[0][1] == 0x44


def test_ib_data_counters_are_exported_in_bytes(ib_root: Path) -> None:
    sample = InfinibandCollector(ib_root, hostname="n1").collect()
    body = exporter.render([(sample, jobs.JobMap())])
    xmit = {lab["device"]: v for lab, v in samples(body, "velyrix_ib_port_xmit_data_bytes_total")}
    assert xmit["mlx5_0"] == 4000.0  # sysfs counts 4-byte words
    state = {lab["device"]: v for lab, v in samples(body, "velyrix_ib_port_state_active")}
    assert state == {"mlx5_0": 1.0, "mlx5_1": 0.0}


def test_label_values_are_escaped() -> None:
    sample = NodeSample(
        hostname='we"ird\\host', gpus=[GPUReading(index=0, uuid="GPU-1", name="A\nB", utilization_pct=1.0)]
    )
    lab, _ = samples(exporter.render([(sample, jobs.JobMap())]), "DCGM_FI_DEV_GPU_UTIL")[0]
    assert lab["Hostname"] == 'we"ird\\host' and lab["modelName"] == "A\nB"


def test_a_node_that_is_down_exports_only_liveness(region: SimRegion) -> None:
    node = next(iter(region.nodes.values()))
    node.powered = False
    body = exporter.render([(read_node(node), jobs.JobMap())])
    assert samples(body, "DCGM_FI_DEV_GPU_UTIL") == []
    assert samples(body, "velyrix_node_up")[0][1] == 0.0


def test_prometheus_client_adapter_yields_the_same_samples(region: SimRegion, tmp_path: Path) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    node = next(iter(region.nodes.values()))
    jobs.write_prolog(tmp_path, "9", [1], team="ml")
    snapshot = [(read_node(node), jobs.read_job_map(tmp_path))]
    registry = CollectorRegistry()
    registry.register(exporter.PrometheusCollector(lambda: snapshot))

    def every(body: bytes) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
        return {
            (name, tuple(sorted(lab.items())), v)
            for name in exporter.exported_metric_names()
            for lab, v in samples(body, name)
        }

    ours = every(exporter.render(snapshot))
    assert len(ours) > 300 and ours == every(generate_latest(registry))


def test_ib_counters_under_node_exporter_names_or_none(region: SimRegion) -> None:
    node = next(iter(region.nodes.values()))
    node.load_pct = 50.0
    region.advance(10.0)
    sample = read_node(node)
    ours = [v for _, v in samples(exporter.render([(sample, jobs.JobMap())]), "velyrix_ib_port_rcv_data_bytes_total")]
    body = exporter.render([(sample, jobs.JobMap())], ib_metrics="node_exporter")
    theirs = samples(body, "node_infiniband_port_data_received_bytes_total")
    assert len(theirs) == len(sample.ib_ports) and "velyrix_ib_port_" not in body.decode()
    assert sorted(v for _, v in theirs) == sorted(ours) and min(ours) > 0  # bytes in both (sysfs words x 4)
    assert "# TYPE node_infiniband_port_data_received_bytes_total counter" in body.decode()
    assert {lab["device"] for lab, v in samples(body, "node_infiniband_state_id") if v == 4.0} == {
        p.device for p in sample.ib_ports
    }
    off = exporter.render([(sample, jobs.JobMap())], ib_metrics="off").decode()
    assert "infiniband" not in off and "velyrix_ib_port" not in off and "DCGM_FI_DEV_GPU_UTIL" in off
