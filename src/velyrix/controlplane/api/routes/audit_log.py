"""``/v1/audit-log``: the audit events as a Merkle tree (``velyrix.controlplane.audit.log``).

Signed checkpoints (latest, or a new one on demand), the audit key, inclusion proofs of an event the
caller may read, consistency proofs between two sizes, and the leaves themselves. Tenants see their own
events in ``entries``; other leaves come with their hash only (``redacted``), so a tenant can still
recompute every root. Provider auditors see every event, and a leaf whose event row is gone.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.audit import checkpoints, log, merkle
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models

router = APIRouter(prefix="/v1/audit-log", tags=["audit-log"], responses=schemas.PROBLEM_RESPONSES)

MAX_ENTRIES = 1000


@router.get("/key", name="audit_log.key")
def key(ctx: Ctx = Depends(require("audit:read"))) -> dict[str, Any]:
    """The Ed25519 public key (raw, base64) that signs checkpoints: pin it with ``--public-key``."""
    return {"algorithm": "Ed25519", "public_key": checkpoints.public_key()}


@router.get("/checkpoints/latest", name="audit_log.checkpoints.latest")
def latest_checkpoint(ctx: Ctx = Depends(require("audit:read"))) -> dict[str, Any]:
    """The newest signed checkpoint (one is published at start and at every interval the log grew)."""
    return _covering(ctx.scope.session, 0)


@router.post("/checkpoints", name="audit_log.checkpoints.create", status_code=201)
def create_checkpoint(ctx: Ctx = Depends(require("audit:read"))) -> dict[str, Any]:
    """Publish a checkpoint of the log as it is now (the latest one when the log has not grown)."""
    row = checkpoints.publish(ctx.scope.session)
    ctx.audit(f"audit-log/checkpoints/{row.id}", status_code=201, detail={"tree_size": row.tree_size})
    ctx.commit()
    return row.document


def _covering(session: orm.Session, size: int) -> dict[str, Any]:
    """The latest checkpoint if it covers ``size`` leaves, else a new one (committed)."""
    row = checkpoints.latest(session)
    if row is None or row.tree_size < size or row.tree_size == 0:
        row = checkpoints.publish(session)
        session.commit()
    return row.document


@router.get("/proofs/inclusion/{event_id}", name="audit_log.proofs.inclusion")
def inclusion(event_id: str, ctx: Ctx = Depends(require("audit:read"))) -> dict[str, Any]:
    """The event, its leaf and audit path, and a signed checkpoint whose root the path leads to: all a
    client needs to verify offline (``velyrix audit verify-proof``)."""
    session = ctx.scope.session
    event = ctx.scope.get(models.AuditEvent, event_id, "audit event")
    leaf = log.leaf_of(session, event.id)
    if leaf is None:
        raise errors.VelyrixError(f"audit event {event.id} has no leaf in the log", hint="run: velyrix audit verify")
    checkpoint = _covering(session, leaf.idx + 1)
    size = int(checkpoint["report"]["tree_size"])
    path = log.hashes(session, merkle.inclusion_ranges(leaf.idx, size))
    return {
        "event": log.event_dict(event),
        "leaf_index": leaf.idx,
        "leaf_hash": bytes(leaf.leaf_hash).hex(),
        "tree_size": size,
        "audit_path": [h.hex() for h in path],
        "checkpoint": checkpoint,
    }


@router.get("/proofs/consistency", name="audit_log.proofs.consistency")
def consistency(
    ctx: Ctx = Depends(require("audit:read")),
    first: int = Query(1, ge=1, description="the smaller tree size (leaves)"),
    second: int | None = Query(None, ge=1, description="the larger tree size (default: the latest checkpoint's)"),
) -> dict[str, Any]:
    """Hashes proving the log of ``first`` leaves is a prefix of the log of ``second`` (RFC 9162 2.1.4)."""
    session = ctx.scope.session
    if second is None:
        second = int(_covering(session, first)["report"]["tree_size"])
    size = log.tree_size(session)
    if not first <= second <= size:
        raise errors.InvalidInputError(
            f"no consistency proof from {first} to {second} leaves: the log has {size}",
            hint=f"pass 1 <= first <= second <= {size}",
        )
    proof = log.hashes(session, merkle.consistency_ranges(first, second))
    return {"first": first, "second": second, "proof": [h.hex() for h in proof]}


def _visible(entry: dict[str, Any], principal: Principal) -> dict[str, Any]:
    if principal.is_provider:
        return entry | {"redacted": False}
    event = entry["event"]
    if event is not None and event["tenant_id"] == principal.tenant_id:
        return entry | {"redacted": False}
    return entry | {"event_id": None, "event": None, "redacted": True}


@router.get("/entries", name="audit_log.entries")
def entries(
    ctx: Ctx = Depends(require("audit:read")),
    start: int = Query(0, ge=0, description="first leaf index"),
    limit: int = Query(200, ge=1, le=MAX_ENTRIES, description="leaves to return"),
) -> dict[str, Any]:
    """Leaves ``[start, start + limit)``: index, event id, stored leaf hash, event (see the module)."""
    session = ctx.scope.session
    rows = [_visible(e, ctx.principal) for e in log.entries(session, start, limit)]
    size = log.tree_size(session)
    return {"tree_size": size, "items": rows, "next_start": start + limit if start + limit < size else None}
