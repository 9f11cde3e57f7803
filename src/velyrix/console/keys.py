"""The console's API keys page: the tenant's keys, a form to create one (the secret shown once) and a
revoke button per key. Each action calls the API's own route code (``api.routes.api_keys``) with the
user's session, so its checks (role rights, step-up for owner keys) and its audit event are the API's;
the event's action is the console route's name (``console.api_keys.*``: kind console). A form the API's
model (or the API's rules) refuses is shown again with each error beside its field and a denied audit event."""

from __future__ import annotations

import json
from typing import Any

import pydantic
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from velyrix import errors
from velyrix.console import access, forms, render
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.api.routes import api_keys
from velyrix.controlplane.auth import roles
from velyrix.controlplane.db import models
from velyrix.controlplane.identity import keyuse

router = APIRouter(include_in_schema=False)
FIELDS = ("name", "role", "expires_in_s", "description")


def _listed(ctx: Ctx) -> list[dict[str, Any]]:
    rows, _ = ctx.scope.page(models.ApiKey, filters={}, cursor=None, limit=200)
    found = keyuse.details(ctx.scope, [r.id for r in rows])
    return [api_keys.out(r, found.get(r.id)) for r in rows]


def _page(request: Request, ctx: Ctx, status: int = 200, **values: Any) -> Response:
    form = values.pop("form", {"role": "viewer"})
    role_names = sorted(roles.ALL_ROLES) if ctx.principal.is_provider else sorted(roles.TENANT_ROLES)
    return render.page(
        request,
        "keys.html",
        status,
        keys=_listed(ctx),
        roles=role_names,
        form=form,
        field_errors=values.pop("field_errors", {}),
        created=values.pop("created", None),
        title="API keys",
    )


@router.get("/console/keys", name="console.keys")
def keys_page(request: Request, ctx: Ctx = Depends(access.reads("keys:read"))) -> Response:
    return _page(request, ctx)


def _refused(request: Request, ctx: Ctx, form: dict[str, str], fields: dict[str, str], exc: Any) -> Response:
    """The form again with ``fields`` beside their inputs; the refusal is recorded as the API records
    its own (``problems.problem``: a denied audit event under the route's name, nothing committed)."""
    status = getattr(exc, "http_status", 422)
    code = getattr(exc, "code", "invalid_request")
    forms.refuse(request, status, code, fields)
    return _page(request, ctx, status, form=form, field_errors=fields)


@router.post("/console/keys", name="console.api_keys.create")
def create(
    request: Request,
    ctx: Ctx = Depends(access.acts("keys:admin")),
    name: str = Form("", max_length=400),
    role: str = Form("", max_length=64),
    expires_in_s: str = Form("", max_length=20),
    description: str = Form("", max_length=1000),
) -> Response:
    """Create a key through ``api_keys.create_key``; the page shows its secret once."""
    form = {"name": name, "role": role, "expires_in_s": expires_in_s, "description": description}
    try:
        body = api_keys.ApiKeyCreate.model_validate(
            {"name": name, "role": role, "description": description, "expires_in_s": expires_in_s.strip() or None}
        )
    except pydantic.ValidationError as exc:
        return _refused(request, ctx, form, forms.field_errors(exc, FIELDS), exc)
    try:
        answer = api_keys.create_key(body, ctx, None)
    except errors.VelyrixError as exc:
        field = str(exc.to_dict().get("fields", {}).get("field", ""))
        where = field if field in FIELDS else ("role" if exc.http_status == 403 else "form")
        return _refused(request, ctx, form, {where: exc.message}, exc)
    created = json.loads(bytes(answer.body))
    return _page(request, ctx, 201, created=created)


@router.post("/console/keys/{key_id}/revoke", name="console.api_keys.revoke")
def revoke(key_id: str, ctx: Ctx = Depends(access.acts("keys:admin"))) -> Response:
    """Revoke through ``api_keys.revoke_key`` (and every key it made), then back to the list."""
    api_keys.revoke_key(key_id, Response(), ctx)
    return RedirectResponse(render.PREFIX + "/keys", status_code=303)
