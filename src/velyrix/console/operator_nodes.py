"""The operator's node forms (provider staff), through the API's own route (``ops.node_actions.act``, scope
``fleet:operate``) with the user's session: the quarantine queue's release to production or RMA of a
quarantined node, and the fleet page's drain or reboot of any node by name. The server decides: a release
needs the node's health evidence clean now or ``override`` (409 ``node_health_not_clean`` otherwise,
``ops/node_stage.py``); a drain or reboot of a self-operated cluster's node needs the tenant's approval or a
break-glass (403 ``access_approval_required``); a reboot needs a fleet driver (409). The audit event carries
the console route's name (``console.nodes.act``, ``console.nodes.operate``; a break-glass:
``access.break_glass``); a refusal is shown beside the form's field with a denied audit event."""

from __future__ import annotations

import pydantic
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from velyrix import errors
from velyrix.console import access, forms, operator_fleet, render
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.db import models
from velyrix.ops import node_actions

router = APIRouter(include_in_schema=False)
ACTIONS = ("release", "rma")
"""What the queue's form offers."""
ORDERS = ("drain", "reboot")
"""What the fleet page's form offers."""
ORDER_FIELDS = ("node", "action", "reason", "approval_id", "break_glass_reason")
"""The fleet page form's fields an error is shown beside (any other error: beside the action)."""
_NO_FILTER = {"region": "", "state": "", "node_type": "", "tenant": ""}
"""The fleet page's filters after a form post: every node."""
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


@router.post("/console/fleet/operate", name="console.nodes.operate")
def operate(
    request: Request,
    ctx: Ctx = Depends(access.acts("fleet:operate")),
    node: str = Form("", max_length=63),
    action: str = Form("", max_length=32),
    reason: str = Form("", max_length=500),
    approval_id: str = Form("", max_length=32),
    break_glass_reason: str = Form("", max_length=500),
) -> Response:
    """Drain or reboot the node called ``node`` through ``node_actions.act``: the fleet page with the order
    done, or with the refusal beside its field (an unknown node: beside the node's name)."""
    form = {"node": node, "action": action, "reason": reason, "approval_id": approval_id}
    form["break_glass_reason"] = break_glass_reason
    fields: dict[str, str] = {} if node else {"node": "the name of a node of the fleet"}
    try:
        body = node_actions.NodeActionRequest.model_validate(
            {
                "action": action if action in ORDERS else f"({action})",
                "reason": reason,
                "approval_id": approval_id or None,
                "break_glass_reason": break_glass_reason or None,
            }
        )
    except pydantic.ValidationError as exc:
        fields = forms.field_errors(exc, ORDER_FIELDS, "action") | fields
    if fields:
        return _order_refused(request, ctx, form, fields, 422, "invalid_request")
    try:
        node_id = ctx.scope.find(models.Node, "node", name=node).id
        done = node_actions.act(node_id, body, ctx)
    except errors.VelyrixError as exc:
        where = "node" if exc.http_status == 404 else "approval_id" if exc.code.startswith("access_") else "action"
        return _order_refused(request, ctx, form, {where: exc.message}, exc.http_status, exc.code)
    return operator_fleet.fleet_page(
        request, operator_fleet.read_fleet(ctx.scope), _NO_FILTER, done=done | {"node": node}
    )


def _order_refused(
    request: Request, ctx: Ctx, form: dict[str, str], fields: dict[str, str], status: int, code: str
) -> Response:
    """The fleet page again with ``fields`` beside the drain/reboot form's inputs, recorded as the API
    records a refusal (``forms.refuse``)."""
    forms.refuse(request, status, code, fields)
    found = operator_fleet.read_fleet(ctx.scope)
    return operator_fleet.fleet_page(request, found, _NO_FILTER, status, form=form, field_errors=fields)
