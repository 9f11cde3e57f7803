"""Compose the planners into the plan of each declared cluster (the ``velyrix plan`` JSON schema,
documented in docs/plan-schema.md)."""

from __future__ import annotations

from typing import Any

from velyrix import catalog
from velyrix.declarations import models
from velyrix.planners import cost, fabric_section

SCHEMA_VERSION = 1


def plan_cluster(spec: models.ClusterSpec, *, simulate: bool = True) -> dict[str, Any]:
    """The plan of one ``velyrix_cluster`` resource as JSON-able data; ``simulate=False`` gives the goodput
    section its closed-form expected ETTR without the seeded Monte Carlo (no numpy; ``goodput.ettr_method``)."""
    nt = catalog.node_type(spec.node_type)
    lines = cost.cluster_lines(spec)
    out: dict[str, Any] = {
        "address": spec.address,
        "name": spec.name,
        "region": spec.region,
        "node_type": spec.node_type,
        "gpu_model": nt.gpu_model,
        "nodes": spec.node_count,
        "gpus": spec.node_count * nt.gpus_per_node,
        "fabric": spec.fabric,
        "scheduler": spec.scheduler,
        "storage": spec.storage.by_key(),
        "acceptance": spec.acceptance.enabled(catalog.fabric(spec.fabric).protocol),
        "cost": {"monthly_usd": cost.total(lines), "lines": [c.to_dict() for c in lines]},
    }
    if spec.workload is not None:
        from velyrix.planners import storage  # only clusters with a workload pay for its import

        storage_plan = storage.plan_storage(spec)
        out["storage_plan"] = storage_plan.to_dict()
        gp = storage.plan_goodput_for(spec, storage_plan, simulate=simulate)
        out["goodput"] = gp.to_dict() if gp else None
    # No performance tier declared (0 GB/s): let the fabric planner use its default storage guidance.
    read_target = (out["storage_plan"]["expected_read_gb_s"] or None) if "storage_plan" in out else None
    out["fabric_plan"] = fabric_section.fabric_section(
        spec.node_type, spec.node_count, spec.fabric, storage_target_gb_s=read_target
    )
    return out


def plan_file(spec_file: models.SpecFile, *, simulate: bool = True) -> dict[str, Any]:
    """The plan of every resource of a file, with the total monthly price (``simulate``: as ``plan_cluster``)."""
    resources = [plan_cluster(c, simulate=simulate) for c in spec_file.clusters]
    return {
        "schema_version": SCHEMA_VERSION,
        "file": spec_file.path,
        "region": spec_file.region,
        "resources": resources,
        "total_monthly_usd": round(sum(r["cost"]["monthly_usd"] for r in resources), 2),
    }
