"""The quarantine queue's forms (provider staff): release a quarantined node to production or send it to
RMA through the API's own route (``ops.node_actions.act``, scope ``fleet:operate``) with the user's
session. The server decides: a release needs the node's health evidence clean now or ``override``
(409 ``node_health_not_clean`` otherwise, ``ops/node_stage.py``). The audit event carries the console
route's name (``console.nodes.act``); a refusal is shown beside the form's field with a denied audit event."""

from __future__ import annotations

import pydantic
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from velyrix import errors
from velyrix.console import access, forms, operator_fleet, render
from velyrix.controlplane.api.context import Ctx
from velyrix.ops import node_actions

router = APIRouter(include_in_schema=False)
ACTIONS = ("release", "rma")
"""What the queue's form offers (the API's ``nodes.act`` also drains and reboots)."""
FIELDS = ("action", "reason")
"""The form's fields an error is shown beside (any other error: beside the action)."""


@router.post("/console/fleet/nodes/{node_id}/actions", name="console.nodes.act")
def node_act(
    node_id: str,
    request: Request,
    ctx: Ctx = Depends(access.acts("fleet:operate")),
    action: str = Form("", max_length=32),
    reason: str = Form("", max_length=500),
    override: str = Form("", max_length=8),
) -> Response:
    """Release or RMA through ``node_actions.act``; back to the queues (303) or the refusal beside the field."""
    form = {"node_id": node_id, "action": action, "reason": reason, "override": override == "on"}
    try:
        body = node_actions.NodeActionRequest.model_validate(
            {"action": action if action in ACTIONS else f"({action})", "reason": reason, "override": form["override"]}
        )
    except pydantic.ValidationError as exc:
        fields = forms.field_errors(exc, FIELDS, "action")
        return _refused(request, ctx, form, fields, 422, "invalid_request")
    try:
        node_actions.act(node_id, body, ctx)
    except errors.VelyrixError as exc:
        if exc.http_status == 404:
            raise
        return _refused(request, ctx, form, {"action": exc.message}, exc.http_status, exc.code)
    return RedirectResponse(f"{render.PREFIX}/fleet/queues", status_code=303)


def _refused(
    request: Request, ctx: Ctx, form: dict[str, object], fields: dict[str, str], status: int, code: str
) -> Response:
    """The queues again with ``fields`` beside the node's inputs; recorded as the API records a refusal
    (``forms.refuse``)."""
    forms.refuse(request, status, code, fields)
    return operator_fleet.queues_page(request, ctx, status, form=form, field_errors=fields)
