"""The ``fabric`` section of a cluster plan: the fabric plan (``fabric.plan_fabric``) with its graph proof
(``fabric_verify.verify``). Kept apart from ``fabric`` so that the planner, its exporters and its verifier
import in one direction only (fabric <- fabric_topology <- fabric_export / fabric_verify <- here)."""

from __future__ import annotations

from typing import Any

from velyrix.planners import fabric_verify
from velyrix.planners.fabric import plan_fabric


def fabric_section(
    node_type: str,
    node_count: int,
    fabric: str,
    *,
    oversubscription: float = 1.0,
    sharp: bool = True,
    storage_target_gb_s: float | None = None,
) -> dict[str, Any]:
    """The ``fabric`` section of a cluster plan: ``plan_fabric(...).to_dict()`` plus
    ``compute.verification`` (the graph proof of ``fabric_verify.verify``)."""
    plan = plan_fabric(
        node_type,
        node_count,
        fabric,
        oversubscription=oversubscription,
        sharp=sharp,
        storage_target_gb_s=storage_target_gb_s,
    )
    out = plan.to_dict()
    out["compute"]["verification"] = fabric_verify.verify(plan).to_dict()
    return out
