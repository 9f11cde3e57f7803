"""``/v1/audit-log``: the audit events as a Merkle tree (``velyrix.controlplane.audit.log``).

Signed checkpoints (latest, or a new one on demand), the audit key, inclusion proofs of an event the
caller may read, consistency proofs between two sizes, and the leaves themselves (``audit.queries``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.audit import checkpoints, queries

router = APIRouter(prefix="/v1/audit-log", tags=["audit-log"], responses=schemas.PROBLEM_RESPONSES)

MAX_ENTRIES = 1000


@router.get("/key", name="audit_log.key")
def key(ctx: Ctx = Depends(require("audit:read"))) -> dict[str, Any]:
    """The Ed25519 public key (raw, base64) that signs checkpoints: pin it with ``--public-key``."""
    return {"algorithm": "Ed25519", "public_key": checkpoints.public_key()}


@router.get("/checkpoints/latest", name="audit_log.checkpoints.latest")
def latest_checkpoint(ctx: Ctx = Depends(require("audit:read"))) -> dict[str, Any]:
    """The newest signed checkpoint (one is published at start and at every interval the log grew)."""
    return queries.covering(ctx.scope, 0)


@router.post("/checkpoints", name="audit_log.checkpoints.create", status_code=201)
def create_checkpoint(ctx: Ctx = Depends(require("audit:read"))) -> dict[str, Any]:
    """Publish a checkpoint of the log as it is now (the latest one when the log has not grown)."""
    row = queries.publish(ctx.scope)
    ctx.audit(f"audit-log/checkpoints/{row.id}", status_code=201, detail={"tree_size": row.tree_size})
    ctx.commit()
    return dict(row.document)


@router.get("/proofs/inclusion/{event_id}", name="audit_log.proofs.inclusion")
def inclusion(event_id: str, ctx: Ctx = Depends(require("audit:read"))) -> dict[str, Any]:
    """The event, its leaf and audit path, and a signed checkpoint whose root the path leads to: all a
    client needs to verify offline (``velyrix audit verify-proof``)."""
    return queries.inclusion(ctx.scope, event_id)


@router.get("/proofs/consistency", name="audit_log.proofs.consistency")
def consistency(
    ctx: Ctx = Depends(require("audit:read")),
    first: int = Query(1, ge=1, le=queries.MAX_INDEX, description="the smaller tree size (leaves)"),
    second: int | None = Query(
        None, ge=1, le=queries.MAX_INDEX, description="the larger tree size (default: the latest checkpoint's)"
    ),
) -> dict[str, Any]:
    """Hashes proving the log of ``first`` leaves is a prefix of the log of ``second`` (RFC 9162 2.1.4)."""
    return queries.consistency(ctx.scope, first, second)


@router.get("/entries", name="audit_log.entries")
def entries(
    ctx: Ctx = Depends(require("audit:read")),
    start: int = Query(0, ge=0, le=queries.MAX_INDEX, description="first leaf index"),
    limit: int = Query(200, ge=1, le=MAX_ENTRIES, description="leaves to return"),
) -> dict[str, Any]:
    """Leaves ``[start, start + limit)``: index, event id, stored leaf hash, event; tenants see other
    tenants' leaves as hashes only (``redacted``)."""
    return queries.entries(ctx.scope, start, limit)
