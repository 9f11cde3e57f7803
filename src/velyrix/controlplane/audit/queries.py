"""What the ``/v1/audit-log`` routes ask of the log, through the caller's ``scoping.Scope`` (route modules
never hold a session: tests/controlplane/test_layering.py). Tenants see their own events in ``entries``;
other leaves come with their hash only (``redacted``); provider keys see every event."""

from __future__ import annotations

from typing import Any

from velyrix import errors
from velyrix.controlplane import scoping
from velyrix.controlplane.audit import checkpoints, log, merkle
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import evidence as ev

MAX_INDEX = 2**62
"""Largest leaf index or tree size a request may name (fits BIGINT on every backend)."""


def covering(scope: scoping.Scope, size: int) -> dict[str, Any]:
    """The latest checkpoint if it covers ``size`` leaves, else a new one (committed)."""
    session = scope.session
    row = checkpoints.latest(session)
    if row is None or row.tree_size < size or row.tree_size == 0:
        row = checkpoints.publish(session)
        session.commit()
    return dict(row.document)


def publish(scope: scoping.Scope) -> ev.AuditCheckpoint:
    """A checkpoint of the log as it is now (the caller audits and commits)."""
    return checkpoints.publish(scope.session)


def inclusion(scope: scoping.Scope, event_id: str) -> dict[str, Any]:
    """The event (if the caller may read it), its leaf, audit path and a signed checkpoint covering it."""
    event = scope.get(models.AuditEvent, event_id, "audit event")
    leaf = log.leaf_of(scope.session, event.id)
    if leaf is None:
        raise errors.VelyrixError(f"audit event {event.id} has no leaf in the log", hint="run: velyrix audit verify")
    checkpoint = covering(scope, leaf.idx + 1)
    size = int(checkpoint["report"]["tree_size"])
    path = log.hashes(scope.session, merkle.inclusion_ranges(leaf.idx, size))
    return {
        "event": log.event_dict(event),
        "leaf_index": leaf.idx,
        "leaf_hash": bytes(leaf.leaf_hash).hex(),
        "tree_size": size,
        "audit_path": [h.hex() for h in path],
        "checkpoint": checkpoint,
    }


def consistency(scope: scoping.Scope, first: int, second: int | None) -> dict[str, Any]:
    """The consistency proof from ``first`` to ``second`` leaves (default: the latest checkpoint's size)."""
    if second is None:
        second = int(covering(scope, first)["report"]["tree_size"])
    size = log.tree_size(scope.session)
    if not first <= second <= size:
        # Not expressible in the query's schema (one bound per parameter): the proof asked for does
        # not exist (yet), as an unknown id does not.
        raise errors.NotFoundError(
            f"no consistency proof from {first} to {second} leaves: the log has {size}",
            hint=f"pass 1 <= first <= second <= {size}",
            kind="consistency proof",
            name=f"{first}..{second}",
        )
    proof = log.hashes(scope.session, merkle.consistency_ranges(first, second))
    return {"first": first, "second": second, "proof": [h.hex() for h in proof]}


def _visible(entry: dict[str, Any], principal: Principal) -> dict[str, Any]:
    if principal.is_provider:
        return entry | {"redacted": False}
    event = entry["event"]
    if event is not None and event["tenant_id"] == principal.tenant_id:
        return entry | {"redacted": False}
    return entry | {"event_id": None, "event": None, "redacted": True}


def entries(scope: scoping.Scope, start: int, limit: int) -> dict[str, Any]:
    """Leaves ``[start, start + limit)`` as the caller may see them, and the next start (None at the end)."""
    rows = [_visible(e, scope.principal) for e in log.entries(scope.session, start, limit)]
    size = log.tree_size(scope.session)
    return {"tree_size": size, "items": rows, "next_start": start + limit if start + limit < size else None}
