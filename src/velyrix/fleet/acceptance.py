"""Delivery tests judged against the node type's published figures (driver-independent).

A driver reports raw measurements (``Driver.run_acceptance`` / ``run_cluster_tests``); this module turns them
into test results: measured vs expected, unit, pass/fail. Expected figures come from the catalog node type
times the share of the datasheet peak that the test reaches on healthy parts, and a node passes when each
measurement is within ``PASS_MARGIN`` of it.

The measurements (the ``result`` of ``run_acceptance``) are ``velyrix.fleet.measurements.NodeMeasurements``.
The tests are those of the declarations model (``velyrix.declarations.models.AcceptanceSpec``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from velyrix import units
from velyrix.catalog import reader, records
from velyrix.declarations.models import CLUSTER_TESTS, NODE_TESTS
from velyrix.fleet.measurements import GpuMeasurement, IbPortMeasurement, NodeMeasurements, NvmeMeasurement

# The shares of the datasheet peaks below are what healthy parts measure; the digital twin's healthy parts
# measure the same shares (``velyrix.fleet.drivers.sim``, with 1% noise), so the two cannot drift apart.
GEMM_SHARE_OF_PEAK = 0.75
"""A large BF16 GEMM reaches ~0.75 of the dense datasheet peak on healthy H100/H200 (assumption: public
cuBLAS results sit at 0.7-0.8 of 989 TFLOPS)."""
HBM_SHARE_OF_PEAK = 0.90
"""A STREAM-like copy reaches ~0.9 of the HBM datasheet bandwidth (assumption, typical of HBM3 parts)."""
NVLINK_SHARE_OF_PEAK = 0.85
"""A p2p all-to-all reaches ~0.85 of the NVLink datasheet bandwidth (assumption)."""
PASS_MARGIN = 0.90
"""A measurement passes at >= 90% of its expected figure (a slow or throttled part lands well below)."""
ALL_REDUCE_SHARE = 0.90
"""Inter-node all-reduce bus bandwidth vs per-GPU NIC line rate (assumption: NCCL tests on 400G NDR rails
report ~45-48 GB/s busbw per 50 GB/s link)."""


def all_reduce_gb_s(link_gbps: float) -> float:
    """Inter-node all-reduce bus bandwidth (GB/s) expected on a per-GPU link of ``link_gbps`` (Gb/s)."""
    return units.gbps_to_gb_s(link_gbps) * ALL_REDUCE_SHARE


__all__ = ["CLUSTER_TESTS", "NODE_TESTS", "NodeMeasurements", "TestResult", "judge_cluster", "judge_node"]


@dataclass(frozen=True)
class TestResult:
    """One test on one subject (``gpu3``, ``mlx5_2``, ``nvme``, ``cluster``): measured vs expected."""

    test: str
    subject: str
    measured: float
    expected: float
    unit: str
    passed: bool
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "subject": self.subject,
            "measured": self.measured,
            "expected": self.expected,
            "unit": self.unit,
            "passed": self.passed,
            "detail": self.detail,
        }


def _ok(measured: float, expected: float) -> bool:
    return measured >= expected * PASS_MARGIN


def _burn_in(nt: records.NodeType, gpus: tuple[GpuMeasurement, ...]) -> Iterator[TestResult]:
    if len(gpus) != nt.gpus_per_node:
        yield TestResult(
            "gpu_burn_in", "gpus", len(gpus), nt.gpus_per_node, "count", False, "GPU count differs from the node type"
        )
    gemm = round(nt.bf16_dense_tflops * GEMM_SHARE_OF_PEAK, 1)
    hbm = round(nt.hbm_bandwidth_gb_s * HBM_SHARE_OF_PEAK, 1)
    for g in gpus:
        subject = f"gpu{g.index}"
        problems = g.problems()
        detail = "; ".join(problems)
        ok_gemm = _ok(g.bf16_tflops, gemm) and not problems
        yield TestResult("gpu_burn_in", subject + "/gemm", g.bf16_tflops, gemm, "TFLOPS", ok_gemm, detail)
        ok_hbm = _ok(g.hbm_gb_s, hbm) and not problems
        yield TestResult("gpu_burn_in", subject + "/hbm", g.hbm_gb_s, hbm, "GB/s", ok_hbm, detail)


def _nvlink(nt: records.NodeType, gpus: tuple[GpuMeasurement, ...]) -> Iterator[TestResult]:
    nvl = round(nt.nvlink_gb_s * NVLINK_SHARE_OF_PEAK, 1)
    for g in gpus:
        links_ok = g.nvlink_links_up == g.nvlink_links_total
        detail = "" if links_ok else f"{g.nvlink_links_up}/{g.nvlink_links_total} links up"
        ok = links_ok and _ok(g.nvlink_gb_s, nvl)
        yield TestResult("nvlink", f"gpu{g.index}", g.nvlink_gb_s, nvl, "GB/s", ok, detail)


PORT_TESTS = {"ib_ports": "InfiniBand", "roce_ports": "Ethernet"}
"""Each compute-port test and the link layer its ports must run (RoCE runs RDMA over Ethernet)."""


def _ports(test: str, nt: records.NodeType, ports: tuple[IbPortMeasurement, ...]) -> Iterator[TestResult]:
    """``test`` (``ib_ports`` or ``roce_ports``): every compute port ACTIVE at the NIC's rate on its link layer."""
    if len(ports) != nt.compute_nics:
        yield TestResult(
            test,
            "ports",
            len(ports),
            nt.compute_nics,
            "count",
            False,
            "compute port count differs from the node type",
        )
    layer = PORT_TESTS[test]
    for p in ports:
        up, right_layer = p.state == "ACTIVE", p.link_layer == layer
        ok = up and right_layer and p.rate_gbps >= nt.compute_nic_gbps
        detail = "" if up else f"port {p.state}"
        if not right_layer:
            detail = f"link layer {p.link_layer}, not {layer}"
        yield TestResult(test, p.device, p.rate_gbps, nt.compute_nic_gbps, "Gb/s", ok, detail)


def _local_nvme(nt: records.NodeType, nv: NvmeMeasurement) -> Iterator[TestResult]:
    read, write = nt.local_nvme_read_gb_s, nt.local_nvme_write_gb_s
    yield TestResult("local_nvme", "nvme/read", nv.read_gb_s, read, "GB/s", _ok(nv.read_gb_s, read))
    yield TestResult("local_nvme", "nvme/write", nv.write_gb_s, write, "GB/s", _ok(nv.write_gb_s, write))


def judge_node(
    node_type: str, m: NodeMeasurements | Mapping[str, Any], tests: tuple[str, ...] | None = None
) -> list[TestResult]:
    """Judge one node's measurements ``m`` (``NodeMeasurements``, or the driver's JSON of it) against node
    type ``node_type``. ``tests`` defaults to every node test, with the port test of the link layer the
    ports run (``ib_ports`` on InfiniBand, ``roce_ports`` on Ethernet: a node's intake burn-in, before it
    has a cluster). Returns one ``TestResult`` per test and subject; the node passes when all pass."""
    nt = reader.node_type(node_type)
    measured = m if isinstance(m, NodeMeasurements) else NodeMeasurements.from_dict(m)
    if tests is None:
        layer = measured.ib_ports[0].link_layer if measured.ib_ports else PORT_TESTS["ib_ports"]
        tests = tuple(t for t in NODE_TESTS if t not in PORT_TESTS or PORT_TESTS[t] == layer)
    out: list[TestResult] = []
    if "gpu_burn_in" in tests:
        out.extend(_burn_in(nt, measured.gpus))
    if "nvlink" in tests:
        out.extend(_nvlink(nt, measured.gpus))
    for test in PORT_TESTS:
        if test in tests:
            out.extend(_ports(test, nt, measured.ib_ports))
    if "local_nvme" in tests:
        out.extend(_local_nvme(nt, measured.nvme))
    return out


def passed(results: list[TestResult]) -> bool:
    """Whether every result passed (an empty list passes: nothing was required)."""
    return all(r.passed for r in results)


def failures(results: list[TestResult]) -> list[str]:
    """Human lines for the failed results (``gpu_burn_in gpu3/gemm: 445.0 TFLOPS < 667.6 expected``)."""
    lines = []
    for r in results:
        if not r.passed:
            extra = f" ({r.detail})" if r.detail else ""
            lines.append(f"{r.test} {r.subject}: {r.measured:g} {r.unit} vs {r.expected:g} expected{extra}")
    return lines


def judge_cluster(
    node_type: str,
    m: dict[str, Any],
    *,
    expected_all_reduce_gb_s: float | None = None,
    expected_write_gb_s: float | None = None,
    expected_read_gb_s: float | None = None,
    tests: tuple[str, ...] = CLUSTER_TESTS,
) -> list[TestResult]:
    """Judge cluster measurements (``run_cluster_tests`` result) against the plans' predictions.

    ``expected_all_reduce_gb_s`` defaults to the per-GPU NIC line rate times ``ALL_REDUCE_SHARE``; storage
    expectations come from the storage plan (skipped when ``None``).
    """
    nt = reader.node_type(node_type)
    out: list[TestResult] = []
    if "all_reduce" in tests:
        exp = expected_all_reduce_gb_s or round(all_reduce_gb_s(nt.compute_nic_gbps), 2)
        if m.get("nodes", 2) == 1:
            exp = round(nt.nvlink_gb_s * NVLINK_SHARE_OF_PEAK, 1)
        out.append(
            TestResult(
                "all_reduce",
                "cluster",
                m["all_reduce_busbw_gb_s"],
                exp,
                "GB/s",
                _ok(m["all_reduce_busbw_gb_s"], exp),
                "NCCL all-reduce bus bandwidth",
            )
        )
    if "storage" in tests:
        for direction, exp_value in (("write", expected_write_gb_s), ("read", expected_read_gb_s)):
            if exp_value is None:
                continue
            got = m[f"storage_{direction}_gb_s"]
            out.append(
                TestResult(
                    "storage",
                    f"parallel_fs/{direction}",
                    got,
                    round(exp_value, 1),
                    "GB/s",
                    _ok(got, exp_value),
                    "aggregate, performance tier vs storage plan",
                )
            )
    return out
