"""``/v1/clusters/{id}/sanitization-certificates``: the signed NIST SP 800-88 certificates of the nodes and
volumes a cluster released (``velyrix.controlplane.evidence.sanitization``), readable by its tenant."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.evidence import sanitization

router = APIRouter(tags=["evidence"], responses=schemas.PROBLEM_RESPONSES)


@router.get("/v1/clusters/{cluster_id}/sanitization-certificates", name="clusters.sanitization_certificates")
def sanitization_certificates(cluster_id: str, ctx: Ctx = Depends(require("clusters:read"))) -> dict[str, Any]:
    """Every signed certificate of the cluster (one per released node and deleted volume), oldest first.
    Verify each offline with ``velyrix verify sanitization FILE``."""
    return {"items": sanitization.documents(ctx.scope, cluster_id)}
