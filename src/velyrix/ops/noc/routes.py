"""``/v1/incidents``: NOC incidents with their lifecycle and timeline. Tenants read their own; the
provider's NOC (``incidents:write``) acknowledges, updates, mitigates, resolves and writes postmortems."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.fleet import clock
from velyrix.ops.noc import incidents

router = APIRouter(prefix="/v1/incidents", tags=["incidents"], responses=schemas.PROBLEM_RESPONSES)


class IncidentOut(BaseModel):
    id: str
    number: str
    key: str
    priority: str = Field(description="P1 .. P4")
    title: str
    tenant_id: str | None
    cluster_id: str | None
    nodes: list[str]
    detail: str
    state: str = Field(description="open, acknowledged, mitigated, resolved, postmortem")
    source: str
    owner: str | None
    opened_at: dt.datetime
    acknowledged_at: dt.datetime | None
    first_response_at: dt.datetime | None
    last_update_at: dt.datetime | None
    mitigated_at: dt.datetime | None
    resolved_at: dt.datetime | None
    postmortem: str
    pages_sent: int


class TimelineEntryOut(BaseModel):
    at: dt.datetime
    kind: str = Field(description="opened, page, state, note")
    actor: str
    text: str
    detail: dict[str, Any]


class IncidentDetailOut(IncidentOut):
    timeline: list[TimelineEntryOut]


class IncidentAction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["ack", "note", "mitigate", "resolve", "postmortem", "reopen"]
    text: str = Field("", max_length=4000, description="the note, the reason, or the postmortem")


@router.get("", name="incidents.list", response_model=schemas.Page[IncidentOut])
def list_incidents(
    ctx: Ctx = Depends(require("incidents:read")),
    cluster_id: str | None = None,
    priority: Literal["P1", "P2", "P3", "P4"] | None = None,
    state: Literal["open", "acknowledged", "mitigated", "resolved", "postmortem"] | None = None,
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    """NOC incidents (tenants: those of their clusters; provider keys: all), oldest first."""
    items, nxt = incidents.api_page(
        ctx.scope, filters={"cluster_id": cluster_id, "priority": priority}, state=state, cursor=cursor, limit=limit
    )
    return {"items": items, "next_cursor": nxt}


@router.get("/{incident_id}", name="incidents.get", response_model=IncidentDetailOut)
def get_incident(incident_id: str, ctx: Ctx = Depends(require("incidents:read"))) -> dict[str, Any]:
    """One incident with its timeline (every page, acknowledgement, note and state change)."""
    return incidents.api_get(ctx.scope, incident_id)


@router.post("/{incident_id}/actions", name="incidents.act", response_model=IncidentDetailOut)
def act(incident_id: str, body: IncidentAction, ctx: Ctx = Depends(require("incidents:write"))) -> dict[str, Any]:
    """Acknowledge, add a note (an update), mitigate, resolve, reopen, or record the postmortem; a move
    the lifecycle forbids answers 409 ``invalid_incident_transition``."""
    data = incidents.api_act(ctx.scope, incident_id, body.action, body.text, clock.now())
    ctx.audit(f"incidents/{incident_id}", detail={"action": body.action, "state": data["state"]})
    ctx.commit()
    return data
