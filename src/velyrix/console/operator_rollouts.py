"""The rollouts pages (provider staff, scope ``fleet:operate``): every rollout (``rollouts.list``), and one
rollout's waves with their stage, cluster, nodes, progress and gate verdict (``rollouts.get``, the wave plan's
node names from ``service.find``), read through the API's own route functions. Pause, resume and abort go
through the API's route (``ops.rollouts.routes.act_on_rollout``) with the user's session: its state table
(409 ``conflict`` for a move the state forbids) and its audit event under the console route's name
(``console.rollouts.act``); a refusal is shown beside the field with a denied audit event."""

from __future__ import annotations

from typing import Any

import pydantic
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from velyrix import errors
from velyrix.console import access, forms, render
from velyrix.controlplane import scoping
from velyrix.controlplane.api.context import Ctx
from velyrix.ops.rollouts import routes as rollout_routes
from velyrix.ops.rollouts import service

router = APIRouter(include_in_schema=False)
ACTIONS = ("pause", "resume", "abort")


@router.get("/console/rollouts", name="console.rollouts")
def rollout_list(request: Request, ctx: Ctx = Depends(access.reads("fleet:operate"))) -> Response:
    """Every rollout, newest first: component, version, region and state."""
    rows = rollout_routes.list_rollouts(ctx, scoping.MAX_PAGE)["items"]
    return render.page(request, "operator_rollouts.html", title="Rollouts", rollouts=rows)


def _page(request: Request, ctx: Ctx, rollout_id: str, status: int = 200, **values: Any) -> Response:
    data = rollout_routes.get_rollout(rollout_id, ctx)
    plan = service.find(ctx.scope, data["id"]).plan
    names = {w["index"]: list(w["nodes"]) for w in plan["waves"]}
    waves = [{**w, "node_names": names.get(w["index"], [])} for w in data["waves"]]
    return render.page(
        request,
        "operator_rollout.html",
        status,
        title=f"Rollout {data['name']}: {data['component']} {data['version']}"[:120],
        rollout=data,
        waves=waves,
        actions=ACTIONS,
        form=values.get("form", {"action": "pause"}),
        field_errors=values.get("field_errors", {}),
    )


@router.get("/console/rollouts/{rollout_id}", name="console.rollout")
def rollout_page(rollout_id: str, request: Request, ctx: Ctx = Depends(access.reads("fleet:operate"))) -> Response:
    """One rollout: its state, waves (nodes, progress, gate verdicts), where it halted, and the action form."""
    return _page(request, ctx, rollout_id)


@router.post("/console/rollouts/{rollout_id}/actions", name="console.rollouts.act")
def rollout_act(
    rollout_id: str,
    request: Request,
    ctx: Ctx = Depends(access.acts("fleet:operate")),
    action: str = Form("", max_length=32),
) -> Response:
    """Pause, resume or abort through ``rollouts.act``; back to the rollout (303) or the refusal beside the field."""
    form = {"action": action}
    try:
        body = rollout_routes.ActionBody.model_validate(form)
    except pydantic.ValidationError as exc:
        message = forms.field_errors(exc, ("action",), "action")["action"]
        return _refused(request, ctx, rollout_id, form, message, 422, "invalid_request")
    try:
        rollout_routes.act_on_rollout(rollout_id, body, ctx)
    except errors.VelyrixError as exc:
        if exc.http_status == 404:
            raise
        return _refused(request, ctx, rollout_id, form, exc.message, exc.http_status, exc.code)
    return RedirectResponse(f"{render.PREFIX}/rollouts/{rollout_id}", status_code=303)


def _refused(
    request: Request, ctx: Ctx, rollout_id: str, form: dict[str, str], message: str, status: int, code: str
) -> Response:
    """The rollout again with ``message`` beside the action; recorded as the API records a refusal."""
    forms.refuse(request, status, code, {"action": message})
    return _page(request, ctx, rollout_id, status, form=form, field_errors={"action": message})
