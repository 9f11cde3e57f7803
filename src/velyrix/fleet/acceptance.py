"""Delivery tests judged against the node type's published figures (driver-independent).

A driver reports raw measurements (``Driver.run_acceptance`` / ``run_cluster_tests``); this module turns them
into test results: measured vs expected, unit, pass/fail. Expected figures come from the catalog node type
times the share of the datasheet peak that the test reaches on healthy parts, and a node passes when each
measurement is within ``PASS_MARGIN`` of it.

``NodeMeasurements`` (the ``result`` of ``run_acceptance``)::

    {"node": str, "gpus": [{"index", "uuid", "serial", "responsive", "bf16_tflops", "hbm_gb_s",
      "nvlink_links_up", "nvlink_links_total", "nvlink_gb_s", "ecc_dbe_volatile", "remap_failure",
      "remap_pending", "throttle_reasons"}],
     "ib_ports": [{"device", "port", "state", "rate_gbps"}],
     "nvme": {"read_gb_s", "write_gb_s", "drives", "media_errors"}}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from velyrix import units
from velyrix.catalog import reader

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


NODE_TESTS = ("gpu_burn_in", "nvlink", "ib_ports", "local_nvme")
CLUSTER_TESTS = ("all_reduce", "storage")


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


def judge_node(node_type: str, m: dict[str, Any], tests: tuple[str, ...] = NODE_TESTS) -> list[TestResult]:
    """Judge one node's measurements ``m`` (``NodeMeasurements``) against node type ``node_type``.

    Returns one ``TestResult`` per test and subject; the node passes when all pass.
    """
    nt = reader.node_type(node_type)
    out: list[TestResult] = []
    gemm = round(nt.bf16_dense_tflops * GEMM_SHARE_OF_PEAK, 1)
    hbm = round(nt.hbm_bandwidth_gb_s * HBM_SHARE_OF_PEAK, 1)
    nvl = round(nt.nvlink_gb_s * NVLINK_SHARE_OF_PEAK, 1)
    gpus = m.get("gpus", [])
    if "gpu_burn_in" in tests:
        if len(gpus) != nt.gpus_per_node:
            out.append(
                TestResult(
                    "gpu_burn_in",
                    "gpus",
                    len(gpus),
                    nt.gpus_per_node,
                    "count",
                    False,
                    "GPU count differs from the node type",
                )
            )
        for g in gpus:
            subject = f"gpu{g['index']}"
            problems = []
            if not g["responsive"]:
                problems.append("not responding (fallen off the bus)")
            if g["ecc_dbe_volatile"]:
                problems.append(f"{g['ecc_dbe_volatile']} uncorrectable ECC errors")
            if g["remap_failure"]:
                problems.append("row remap failure")
            if g.get("remap_pending"):
                problems.append("row remap pending (needs a reset)")
            detail = "; ".join(problems)
            out.append(
                TestResult(
                    "gpu_burn_in",
                    subject + "/gemm",
                    g["bf16_tflops"],
                    gemm,
                    "TFLOPS",
                    _ok(g["bf16_tflops"], gemm) and not problems,
                    detail,
                )
            )
            out.append(
                TestResult(
                    "gpu_burn_in",
                    subject + "/hbm",
                    g["hbm_gb_s"],
                    hbm,
                    "GB/s",
                    _ok(g["hbm_gb_s"], hbm) and not problems,
                    detail,
                )
            )
    if "nvlink" in tests:
        for g in gpus:
            links_ok = g["nvlink_links_up"] == g["nvlink_links_total"]
            out.append(
                TestResult(
                    "nvlink",
                    f"gpu{g['index']}",
                    g["nvlink_gb_s"],
                    nvl,
                    "GB/s",
                    links_ok and _ok(g["nvlink_gb_s"], nvl),
                    "" if links_ok else f"{g['nvlink_links_up']}/{g['nvlink_links_total']} links up",
                )
            )
    if "ib_ports" in tests:
        ports = m.get("ib_ports", [])
        if len(ports) != nt.compute_nics:
            out.append(
                TestResult(
                    "ib_ports",
                    "ports",
                    len(ports),
                    nt.compute_nics,
                    "count",
                    False,
                    "compute port count differs from the node type",
                )
            )
        for p in ports:
            up = p["state"] == "ACTIVE"
            out.append(
                TestResult(
                    "ib_ports",
                    p["device"],
                    p["rate_gbps"],
                    nt.compute_nic_gbps,
                    "Gb/s",
                    up and p["rate_gbps"] >= nt.compute_nic_gbps,
                    "" if up else f"port {p['state']}",
                )
            )
    if "local_nvme" in tests:
        nv = m.get("nvme", {})
        out.append(
            TestResult(
                "local_nvme",
                "nvme/read",
                nv.get("read_gb_s", 0.0),
                nt.local_nvme_read_gb_s,
                "GB/s",
                _ok(nv.get("read_gb_s", 0.0), nt.local_nvme_read_gb_s),
            )
        )
        out.append(
            TestResult(
                "local_nvme",
                "nvme/write",
                nv.get("write_gb_s", 0.0),
                nt.local_nvme_write_gb_s,
                "GB/s",
                _ok(nv.get("write_gb_s", 0.0), nt.local_nvme_write_gb_s),
            )
        )
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
