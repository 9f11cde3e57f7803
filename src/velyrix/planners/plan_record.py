"""The stored cluster plan (``planners.plan.plan_cluster``'s output, the ``clusters.plan`` column) as a typed
record of the sections the control plane acts on: what the fabric and the storage plans promise, which
acceptance then holds the delivered cluster to. ``ClusterPlan.from_dict`` parses the JSON once; the whole
document stays available as ``document`` (``to_dict`` gives it back unchanged).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1
"""Version of the sections typed here (the plan's JSON carries its own ``schema_version`` at file level)."""


def _number(raw: Mapping[str, Any], key: str) -> float | None:
    value = raw.get(key)
    return float(value) if value else None


@dataclass(frozen=True)
class FabricPromise:
    """The fabric's promise: per-GPU link (Gb/s), bisection (Gb/s), GPUs cabled, and what the storage plane
    carries (``storage_plane.deliverable_gb_s``, GB/s aggregate)."""

    link_gbps: float | None = None
    bisection_gbps: float | None = None
    gpus: int | None = None
    storage_plane_gb_s: float | None = None

    @classmethod
    def from_dict(cls, fabric_plan: Mapping[str, Any]) -> FabricPromise:
        compute = fabric_plan.get("compute") or {}
        gpus = fabric_plan.get("gpus")
        return cls(
            _number(compute, "link_gbps"),
            _number(compute, "bisection_gbps"),
            int(gpus) if gpus else None,
            _number(fabric_plan.get("storage_plane") or {}, "deliverable_gb_s"),
        )


@dataclass(frozen=True)
class StoragePromise:
    """The performance tier's promise, aggregate over the cluster (GB/s)."""

    expected_write_gb_s: float
    expected_read_gb_s: float


@dataclass(frozen=True)
class ClusterPlan:
    """A stored cluster plan: its fabric and storage promises (None where the plan has no such section)."""

    fabric: FabricPromise | None = None
    storage: StoragePromise | None = None
    document: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> ClusterPlan:
        raw = raw or {}
        fabric_plan = raw.get("fabric_plan") or {}
        storage_plan = raw.get("storage_plan") or {}
        storage = None
        if "expected_write_gb_s" in storage_plan:
            storage = StoragePromise(
                float(storage_plan["expected_write_gb_s"]), float(storage_plan["expected_read_gb_s"])
            )
        return cls(FabricPromise.from_dict(fabric_plan) if fabric_plan else None, storage, raw)

    def to_dict(self) -> dict[str, Any]:
        """The plan document as stored (the typed sections are views of it)."""
        return dict(self.document)
