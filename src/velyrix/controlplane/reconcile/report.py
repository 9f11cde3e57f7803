"""The acceptance report of a delivery: per node each test (worst subject, measured vs expected), per cluster
the all-reduce and storage tests, and the nodes that were replaced and why."""

from __future__ import annotations

from typing import Any

from velyrix.controlplane.db import models
from velyrix.fleet import acceptance
from velyrix.fleet.hardware import StoredHardware

KIND = "velyrix.acceptance/v1"


def summarize_node(results: list[acceptance.TestResult]) -> list[dict[str, Any]]:
    """One line per test: its worst subject (lowest measured/expected), how many subjects passed."""
    out = []
    for test in dict.fromkeys(r.test for r in results):
        rows = [r for r in results if r.test == test]
        worst = min(rows, key=lambda r: (r.passed, r.measured / r.expected if r.expected else 0.0))
        out.append(
            {
                "test": test,
                "subject": worst.subject,
                "measured": worst.measured,
                "expected": worst.expected,
                "unit": worst.unit,
                "passed": all(r.passed for r in rows),
                "subjects_passed": sum(r.passed for r in rows),
                "subjects": len(rows),
                "detail": "; ".join(acceptance.failures(rows))[:500],
            }
        )
    return out


def build(
    cluster: models.Cluster,
    nodes: list[models.Node],
    node_results: dict[str, list[dict[str, Any]]],
    cluster_results: list[dict[str, Any]],
    replacements: list[dict[str, Any]],
    *,
    delivered_at: str,
) -> dict[str, Any]:
    """The report document (unsigned). ``node_results``: node name -> ``summarize_node`` lines."""
    node_rows = []
    for node in sorted(nodes, key=lambda n: n.name):
        hw = StoredHardware.from_dict(node.hardware)
        tests = node_results.get(node.name, [])
        node_rows.append(
            {
                "name": node.name,
                "serial": hw.serial,
                "su": hw.su,
                "gpu_uuids": list(hw.gpu_uuids),
                "passed": all(t["passed"] for t in tests),
                "tests": tests,
            }
        )
    passed = (
        all(n["passed"] for n in node_rows)
        and all(r["passed"] for r in cluster_results)
        and len(node_rows) == cluster.node_count
    )
    return {
        "kind": KIND,
        "cluster": {
            "id": cluster.id,
            "name": cluster.name,
            "tenant_id": cluster.tenant_id,
            "region": cluster.region,
            "node_type": cluster.node_type,
            "node_count": cluster.node_count,
            "fabric": cluster.spec.get("fabric"),
        },
        "delivered_at": delivered_at,
        "passed": passed,
        "nodes": node_rows,
        "cluster_tests": cluster_results,
        "replacements": replacements,
        "criteria": {
            "pass_margin": acceptance.PASS_MARGIN,
            "gemm_share_of_peak": acceptance.GEMM_SHARE_OF_PEAK,
            "hbm_share_of_peak": acceptance.HBM_SHARE_OF_PEAK,
            "nvlink_share_of_peak": acceptance.NVLINK_SHARE_OF_PEAK,
        },
    }
