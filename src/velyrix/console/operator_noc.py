"""The NOC's incident pages (provider staff): every incident with its timers (``noc_timers``: first
response and updates against the tenant's contract, time open), one incident with its timeline, and
acknowledge / note / mitigate / resolve through the API's own route (``ops.noc.routes.act``) with the
user's session: the API's lifecycle rules (409 ``invalid_incident_transition``), its audit event under
the console route's name (``console.incidents.act``), and the refusal shown beside the form."""

from __future__ import annotations

from typing import Any, Literal

import pydantic
from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from velyrix import errors
from velyrix.console import access, forms, noc_timers, render
from velyrix.controlplane import scoping
from velyrix.controlplane.api.context import Ctx
from velyrix.fleet import clock
from velyrix.ops.noc import incidents
from velyrix.ops.noc import routes as noc_routes

router = APIRouter(include_in_schema=False)
ACTIONS = ("ack", "note", "mitigate", "resolve")
"""What the incident page offers (the API also takes ``postmortem`` and ``reopen``)."""
FIELDS = ("action", "text")
"""The form's fields an error is shown beside (any other error: beside the action)."""


def _with_timers(ctx: Ctx, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    contracts = noc_timers.targets(ctx.scope, (i["tenant_id"] for i in found))
    now = clock.now()
    return [{**i, "timers": noc_timers.timers(i, contracts[i["tenant_id"]], now)} for i in found]


@router.get("/console/noc/incidents", name="console.noc_incidents")
def incident_list(
    request: Request,
    ctx: Ctx = Depends(access.reads("fleet:read")),
    priority: Literal["", "P1", "P2", "P3", "P4"] = Query(""),
    state: Literal["", "open", "acknowledged", "mitigated", "resolved", "postmortem"] = Query(""),
) -> Response:
    """Every incident (active ones first, then by priority and age) with its timers; filters as GET."""
    found, _ = incidents.api_page(
        ctx.scope, filters={"priority": priority or None}, state=state or None, cursor=None, limit=scoping.MAX_PAGE
    )
    rows = _with_timers(ctx, found)
    rows.sort(key=lambda i: (i["resolved_at"] is not None, i["priority"], i["opened_at"]))
    wanted = {"priority": priority, "state": state}
    return render.page(request, "operator_incidents.html", title="NOC incidents", incidents=rows, wanted=wanted)


def _page(request: Request, ctx: Ctx, incident_id: str, status: int = 200, **values: Any) -> Response:
    data = noc_routes.get_incident(incident_id, ctx)
    (shown,) = _with_timers(ctx, [data])
    return render.page(
        request,
        "operator_incident.html",
        status,
        title=f"{data['number']} {data['priority']}: {data['title']}"[:120],
        incident=shown,
        actions=ACTIONS,
        form=values.pop("form", {"action": "ack", "text": ""}),
        field_errors=values.pop("field_errors", {}),
    )


@router.get("/console/noc/incidents/{incident_id}", name="console.noc_incident")
def incident_page(incident_id: str, request: Request, ctx: Ctx = Depends(access.reads("fleet:read"))) -> Response:
    """One incident: its timers, lifecycle times, timeline, and the action form."""
    return _page(request, ctx, incident_id)


@router.post("/console/noc/incidents/{incident_id}/actions", name="console.incidents.act")
def incident_act(
    incident_id: str,
    request: Request,
    ctx: Ctx = Depends(access.acts("incidents:write")),
    action: str = Form("", max_length=32),
    text: str = Form("", max_length=8000),
) -> Response:
    """Acknowledge, note, mitigate or resolve through ``ops.noc.routes.act``; back to the incident."""
    form = {"action": action, "text": text}
    try:
        body = noc_routes.IncidentAction.model_validate(form)
    except pydantic.ValidationError as exc:
        fields = forms.field_errors(exc, FIELDS, "action")
        return _refused(request, ctx, incident_id, form, fields, 422, "invalid_request")
    try:
        noc_routes.act(incident_id, body, ctx)
    except errors.VelyrixError as exc:
        if exc.http_status == 404:
            raise
        return _refused(request, ctx, incident_id, form, {"action": exc.message}, exc.http_status, exc.code)
    return RedirectResponse(f"{render.PREFIX}/noc/incidents/{incident_id}", status_code=303)


def _refused(
    request: Request, ctx: Ctx, incident_id: str, form: dict[str, str], fields: dict[str, str], status: int, code: str
) -> Response:
    """The incident again with ``fields`` beside their inputs; recorded as the API records a refusal
    (``forms.refuse``)."""
    forms.refuse(request, status, code, fields)
    return _page(request, ctx, incident_id, status, form=form, field_errors=fields)
