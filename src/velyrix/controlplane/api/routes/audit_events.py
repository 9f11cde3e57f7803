"""``/v1/audit-events``: read-only. Tenants read their own events; provider auditors read all."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, Depends, Query

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.audit import listing
from velyrix.controlplane.db import models

router = APIRouter(prefix="/v1/audit-events", tags=["audit-events"], responses=schemas.PROBLEM_RESPONSES)


def out(e: models.AuditEvent) -> dict[str, Any]:
    return {
        "id": e.id,
        "at": e.at,
        "actor": e.actor,
        "key_id": e.key_id,
        "tenant_id": e.tenant_id,
        "action": e.action,
        "target": e.target,
        "request_id": e.request_id,
        "source_address": e.source_address,
        "outcome": e.outcome,
        "status_code": e.status_code,
        "error_code": e.error_code,
        "detail": e.detail,
    }


@router.get("", name="audit_events.list", response_model=schemas.Page[schemas.AuditEventOut])
def list_events(
    ctx: Ctx = Depends(require("audit:read")),
    action: str | None = Query(
        None, max_length=listing.MAX_FILTER_CHARS, description="the action, or a prefix ending in * (console.*)"
    ),
    outcome: str | None = None,
    key_id: str | None = None,
    request_id: str | None = None,
    target: str | None = None,
    actor: str | None = Query(None, max_length=listing.MAX_FILTER_CHARS, description="a part of the actor, any case"),
    since: dt.datetime | None = Query(None, description="events at or after this time (no zone: UTC)"),
    until: dt.datetime | None = Query(None, description="events before this time (no zone: UTC)"),
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    """The audit events the caller may read (tenants: their own), oldest first, narrowed by the filters."""
    filters = listing.Filters(action, actor, outcome, key_id, request_id, target, since, until)
    rows, nxt = listing.page(ctx.scope, filters, cursor, limit)
    return {"items": [out(r) for r in rows], "next_cursor": nxt}


@router.get("/{event_id}", name="audit_events.get", response_model=schemas.AuditEventOut)
def get_event(event_id: str, ctx: Ctx = Depends(require("audit:read"))) -> dict[str, Any]:
    return out(ctx.scope.get(models.AuditEvent, event_id, "audit event"))
