"""``GET /v1/clusters/{id}/scheduler``: the scheduler delivered with a cluster (``scheduler_deliveries``,
written by the reconcilers' Scheduler step, ``velyrix.controlplane.reconcile.scheduler``): its state, the
environment that points Slurm's tools at it, its node names and delivered artifacts (Kueue, GPU manifests)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from velyrix import errors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import scheduler as tables

router = APIRouter(prefix="/v1/clusters", tags=["clusters"], responses=schemas.PROBLEM_RESPONSES)


@router.get("/{cluster_id}/scheduler", name="clusters.scheduler")
def delivered_scheduler(cluster_id: str, ctx: Ctx = Depends(require("clusters:read"))) -> dict[str, Any]:
    """``{"kind", "state", "message", "env", "nodes", "artifacts", "updated_at"}`` of the cluster's scheduler;
    404 ``not_found`` while none was delivered (before Ready, or a control plane that delivers none)."""
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    row = ctx.scope.latest(tables.SchedulerDelivery, cluster_id=cluster.id)
    if row is None:
        cond = next((c for c in cluster.conditions if c.get("type") == "SchedulerReady"), None)
        raise errors.NotFoundError(
            f"cluster '{cluster.name}' has no delivered scheduler (phase {cluster.phase})",
            hint=(cond or {}).get("message") or "the scheduler is delivered before the cluster is Ready",
        )
    return {
        "kind": row.kind,
        "state": row.state,
        "message": row.message,
        "env": row.env,
        "nodes": row.nodes,
        "artifacts": row.artifacts,
        "updated_at": row.updated_at,
    }
