"""``/v1/physical-access/events``: badge readers and cage-door controllers post what happened at a door.

Only keys of the provider role ``physical-access`` (scope ``physical:report``, nothing else) may post;
they are issued out of band (``velyrix admin create-provider-key NAME --role physical-access``), since no
operator key holds the scope. Each accepted event becomes one audit event (action ``physical.<kind>``,
target ``sites/<site>/doors/<door>``), and so a leaf of the tamper-evident log and an OCSF event of the
SIEM export (``audit/ocsf.py``). The controller's claims are evidence, not truth: they are bounded
(fields by pattern and length, the body by the edge's 64 KiB), the time must lie within the last 30 days
and at most 5 minutes ahead of the server's clock, and the server records who posted it and from where.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from velyrix import errors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require

router = APIRouter(prefix="/v1/physical-access", tags=["physical-access"], responses=schemas.PROBLEM_RESPONSES)
MAX_AGE = dt.timedelta(days=30)
MAX_AHEAD = dt.timedelta(minutes=5)
Kind = Literal["access_granted", "access_denied", "door_opened", "door_closed", "door_forced", "door_held_open"]


class PhysicalEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Kind = Field(description="a badge read (access_granted/denied) or the door's own state")
    site: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,62}$", description="data-center site code, e.g. use1-dc2")
    door: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$", description="door or cage id, e.g. cage-07/a")
    occurred_at: dt.datetime = Field(description="when the controller saw it (RFC 3339 with a UTC offset)")
    reader_event_id: str = Field(pattern=r"^[A-Za-z0-9._:-]{1,128}$", description="the controller's own event id")
    badge_id: str | None = Field(None, pattern=r"^[A-Za-z0-9-]{1,64}$", description="badge read, if any")
    person: str | None = Field(None, min_length=1, max_length=128, description="badge holder, as the system knows")


class PhysicalEventAccepted(BaseModel):
    audit_event_id: str = Field(description="the audit event that records it (GET /v1/audit-log/proofs/...)")


def _check_time(at: dt.datetime) -> dt.datetime:
    if at.tzinfo is None:
        raise errors.InvalidInputError(
            "occurred_at has no UTC offset", hint="send RFC 3339 with an offset, e.g. 2026-12-01T10:40:00Z"
        )
    now = dt.datetime.now(dt.UTC)
    if not now - MAX_AGE <= at <= now + MAX_AHEAD:
        raise errors.InvalidInputError(
            f"occurred_at {at.isoformat()} is outside the accepted window (30 days back, 5 minutes ahead)",
            hint="check the controller's clock (NTP)",
        )
    return at.astimezone(dt.UTC)


@router.post("/events", name="physical_access.ingest", status_code=201, response_model=PhysicalEventAccepted)
def ingest(body: PhysicalEvent, ctx: Ctx = Depends(require("physical:report"))) -> dict[str, Any]:
    at = _check_time(body.occurred_at)
    detail = body.model_dump(exclude_none=True, exclude={"occurred_at"}) | {"occurred_at": at.isoformat()}
    event = ctx.audit(
        f"sites/{body.site}/doors/{body.door}",
        status_code=201,
        outcome="denied" if body.kind == "access_denied" else "success",
        detail=detail,
        action=f"physical.{body.kind}",
    )
    ctx.scope.flush()
    ctx.commit()
    return {"audit_event_id": event.id}
