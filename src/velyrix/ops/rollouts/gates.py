"""A wave's gates: ``acceptance`` (the node type's acceptance tests on every upgraded node), ``no_new_xids``
(no XID of the catalog's ``xid_gate`` list logged since the install) and ``all_reduce_baseline`` (the
group's NCCL all-reduce bus bandwidth at least ``1 - all_reduce_tolerance`` of its pre-upgrade baseline).
Pure functions of the journal's results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from velyrix.catalog import versions
from velyrix.fleet import acceptance


@dataclass
class Verdict:
    """The gates' verdict on one wave: ``failed`` node -> reasons; ``problems`` of the wave as a whole."""

    failed: dict[str, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def holds(self, failed_node_limit: int) -> bool:
        """Whether the wave passes: no wave-level problem and at most ``failed_node_limit`` failed nodes."""
        return not self.problems and len(self.failed) <= failed_node_limit

    def to_dict(self) -> dict[str, Any]:
        return {"failed_nodes": self.failed, "problems": self.problems}


def judge_node(node_type: str, measured: Mapping[str, Any], installed: Mapping[str, Any]) -> dict[str, Any]:
    """A node's validation: its acceptance results and the gated XIDs its install logged."""
    if not installed.get("booted", True):
        return {"acceptance": ["node did not boot after the install"], "xids": []}
    results = acceptance.judge_node(node_type, measured)
    gated = set(versions.rollout_times().xid_gate)
    xids = [[int(g), int(x)] for g, x in installed.get("xids", []) if int(x) in gated]
    return {"acceptance": acceptance.failures(results), "xids": xids}


def verdict(
    gates: Sequence[str],
    validations: Mapping[str, Mapping[str, Any]],
    baseline_gb_s: float | None,
    after_gb_s: float | None,
) -> Verdict:
    """The wave's verdict from each node's ``judge_node`` result and the group's all-reduce before/after."""
    out = Verdict()
    for node, v in validations.items():
        reasons: list[str] = []
        if "acceptance" in gates and v.get("acceptance"):
            reasons.extend(str(x) for x in v["acceptance"])
        if "no_new_xids" in gates and v.get("xids"):
            reasons.extend(f"GPU {g} logged XID {x} after the install" for g, x in v["xids"])
        if reasons:
            out.failed[node] = reasons
    if "all_reduce_baseline" in gates and baseline_gb_s and after_gb_s is not None:
        floor = baseline_gb_s * (1 - versions.rollout_times().all_reduce_tolerance)
        if after_gb_s < floor:
            out.problems.append(
                f"all-reduce {after_gb_s:.1f} GB/s is below {floor:.1f} GB/s (baseline {baseline_gb_s:.1f} GB/s)"
            )
    return out
