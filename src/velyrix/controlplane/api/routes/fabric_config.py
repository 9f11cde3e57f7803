"""``GET /v1/clusters/{id}/fabric``: the cluster's fabric configuration as delivered artifacts (OpenSM
partitions.conf, UFM REST calls, NVUE YAML and SONiC config_db per switch; ``controlplane.fabric_artifacts``)
and whether the fleet's network driver runs exactly that configuration now (``applied``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from velyrix.controlplane import fabric_artifacts
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.db import models

router = APIRouter(prefix="/v1/clusters", tags=["clusters"], responses=schemas.PROBLEM_RESPONSES)


@router.get("/{cluster_id}/fabric", name="clusters.fabric")
def cluster_fabric(cluster_id: str, request: Request, ctx: Ctx = Depends(require("clusters:read"))) -> dict[str, Any]:
    """``{"cluster", "infiniband": {"partitions_conf", "ufm"} | null, "ethernet": {plane: {"nvue", "sonic"}},
    "summary", "digest", "applied": {"digest", "matches"} | null}``; 404 before the cluster has networks."""
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    body = fabric_artifacts.render_for(ctx.scope, cluster)
    runtime = getattr(request.app.state, "fleet", None)
    network = getattr(getattr(runtime, "driver", None), "network", None)
    current = network.applied(cluster.id) if network is not None else None
    body["applied"] = (
        None
        if current is None
        else {"digest": current.get("digest"), "matches": current.get("digest") == body["digest"]}
    )
    return body
