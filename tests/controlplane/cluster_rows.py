"""A cluster row straight in the database, as the API would store a new one (Pending, planned), for tests
that seed their own tenants."""

from __future__ import annotations

from typing import Any


def pending_cluster(tenant_id: str, spec: Any, name: str | None = None) -> Any:
    """A ``models.Cluster`` of ``tenant_id`` for the validated ``spec`` (named ``name`` or the spec's), with
    its plan and the Pending phase; the caller adds and commits it."""
    from velyrix.controlplane import specs, status
    from velyrix.controlplane.db import models
    from velyrix.planners import plan

    cluster = models.Cluster(
        tenant_id=tenant_id,
        name=name or spec.name,
        region=spec.region,
        node_type=spec.node_type,
        node_count=spec.node_count,
        spec=specs.to_body(spec),
        plan=plan.plan_cluster(spec),
        conditions=[],
        phase_history=[],
        events=[],
    )
    status.set_phase(cluster, "Pending", actor="test", reason="fixture")
    return cluster
