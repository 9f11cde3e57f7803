"""The console's incidents: the NOC incidents of the tenant's clusters (``/v1/incidents`` through its own
route functions, ``ops.noc.routes``): priority, state, the timers of the tenant's SLA contract (minutes to
the first response and between updates, ``ops.billing.views.contract_view``), and each incident's
timeline (pages, acknowledgement, the NOC's notes, state changes) as the API shows it to the tenant."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from velyrix.console import access, render
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx
from velyrix.fleet import clock
from velyrix.ops.billing import views as billing_views
from velyrix.ops.noc import routes as noc_routes
from velyrix.ops.noc import states

router = APIRouter(include_in_schema=False)
PAGE = 50
PRIORITIES = ("P1", "P2", "P3", "P4")


def minutes(seconds: float) -> str:
    """``seconds`` as ``42 min`` or ``3 h 05 min`` (whole minutes, rounded down)."""
    whole = max(0, int(seconds // 60))
    return f"{whole // 60} h {whole % 60:02d} min" if whole >= 60 else f"{whole} min"


def _since(start: dt.datetime, end: dt.datetime) -> float:
    return (end - start).total_seconds()


def timers(incident: dict[str, Any], target: dict[str, Any] | None, now: dt.datetime) -> list[dict[str, str]]:
    """The incident's clocks as the tenant reads them: open or resolved after, the first response against
    the contract's ``first_response_min``, and (acknowledged, not yet mitigated) the next update against
    ``update_every_min``. Each: ``name``, ``value`` (text), ``status`` (``met``, ``running``, ``overdue``)."""
    opened, resolved = incident["opened_at"], incident["resolved_at"]
    out = [
        {"name": "resolved after", "value": minutes(_since(opened, resolved)), "status": "met"}
        if resolved
        else {"name": "open for", "value": minutes(_since(opened, now)), "status": "running"}
    ]
    first = incident["first_response_at"]
    limit_s = 60.0 * target["first_response_min"] if target else None
    if first is not None:
        late = limit_s is not None and _since(opened, first) > limit_s
        text = f"after {minutes(_since(opened, first))}" + (f" (target {minutes(limit_s)})" if limit_s else "")
        out.append({"name": "first response", "value": text, "status": "overdue" if late else "met"})
    elif resolved is None:
        waited = _since(opened, now)
        text = f"waiting {minutes(waited)}" + (f" (target {minutes(limit_s)})" if limit_s else "")
        status = "overdue" if limit_s is not None and waited > limit_s else "running"
        out.append({"name": "first response", "value": text, "status": status})
    last = incident["last_update_at"] or first
    if target and last is not None and incident["state"] == states.ACKNOWLEDGED:
        every_s = 60.0 * target["update_every_min"]
        ago = _since(last, now)
        text = f"last {minutes(ago)} ago (every {minutes(every_s)})"
        out.append({"name": "updates", "value": text, "status": "overdue" if ago > every_s else "running"})
    return out


def _targets(ctx: Ctx) -> dict[str, Any]:
    """The response targets of the tenant's SLA contract, by priority (none for a provider principal)."""
    tenant = ctx.principal.tenant_id
    if tenant is None:
        return {}
    return dict(billing_views.contract_view(ctx.scope, tenant)["contract"]["response"])


@router.get("/console/incidents", name="console.incidents")
def incidents_page(
    request: Request,
    ctx: Ctx = Depends(access.reads("incidents:read")),
    state: str = Query("", max_length=16),
    priority: str = Query("", max_length=4),
    cursor: str = Query("", max_length=61, pattern=f"^$|{schemas.CURSOR_PATTERN}"),
) -> Response:
    """The incidents of the tenant's clusters (oldest first, as the API lists them), by state and priority."""
    field_errors = {}
    if state and state not in states.STATES:
        field_errors["state"] = f"one of {', '.join(states.STATES)}"
    if priority and priority not in PRIORITIES:
        field_errors["priority"] = f"one of {', '.join(PRIORITIES)}"
    items: list[dict[str, Any]] = []
    nxt = None
    if not field_errors:
        found = noc_routes.list_incidents(
            ctx,
            cluster_id=None,
            priority=priority or None,  # type: ignore[arg-type]
            state=state or None,  # type: ignore[arg-type]
            cursor=cursor or None,
            limit=PAGE,
        )
        items, nxt = found["items"], found["next_cursor"]
    targets, now = _targets(ctx), clock.now()
    rows = [{**i, "timers": timers(i, targets.get(i["priority"]), now)} for i in items]
    return render.page(
        request,
        "admin_incidents.html",
        422 if field_errors else 200,
        incidents=rows,
        form={"state": state, "priority": priority},
        field_errors=field_errors,
        states=states.STATES,
        priorities=PRIORITIES,
        next_cursor=nxt,
        title="Incidents",
    )


@router.get("/console/incidents/{incident_id}", name="console.incident")
def incident_page(incident_id: str, request: Request, ctx: Ctx = Depends(access.reads("incidents:read"))) -> Response:
    """One incident: priority, state, timers and its timeline, newest first."""
    incident = noc_routes.get_incident(incident_id, ctx)
    clocks = timers(incident, _targets(ctx).get(incident["priority"]), clock.now())
    timeline = sorted(incident["timeline"], key=lambda e: e["at"], reverse=True)
    return render.page(
        request,
        "admin_incident.html",
        incident=incident,
        timers=clocks,
        timeline=timeline,
        title=f"Incident {incident['number']}",
    )
