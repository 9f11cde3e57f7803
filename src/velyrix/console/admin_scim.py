"""The SCIM tokens and the MFA policy on the console's single sign-on page (``admin_identity.show``):
a SCIM token is a tenant API key of role ``scim`` (``/scim/v2``), made with ``api_keys.create_key`` (its
secret shown this once) and revoked with ``api_keys.revoke_key``; the policy (second factor required, TOTP
allowed, step-up window, session timeouts) is set with ``identity_policy.set_policy``. Each is the API's
own route with the user's session: its rules, its audit event (``console.*``), its errors beside the field."""

from __future__ import annotations

import json

import pydantic
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from velyrix import errors
from velyrix.console import access, admin_identity, forms
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.api.routes import api_keys, identity_policy

router = APIRouter(include_in_schema=False)
POLICY_FIELDS = tuple(identity_policy.PolicyBody.model_fields)
SCIM_ROLE = "scim"


@router.post("/console/identity/scim-tokens", name="console.scim_tokens.create")
def create_token(
    request: Request,
    ctx: Ctx = Depends(access.acts("scim:provision")),
    name: str = Form("", max_length=400),
) -> Response:
    """A SCIM token for the identity provider (``api_keys.create_key``, role ``scim``); shown once. The
    page asks for the right to provision (owners), the API's route for the right to make keys."""
    ctx.principal.require("keys:admin")
    try:
        body = api_keys.ApiKeyCreate.model_validate(
            {"name": name, "role": SCIM_ROLE, "description": "SCIM provisioning token (console)"}
        )
        answer = api_keys.create_key(body, ctx, None)
    except pydantic.ValidationError as exc:
        fields = {"name": str(exc.errors()[0]["msg"])}
        forms.refuse(request, 422, "invalid_input", fields)
        return admin_identity.show(request, ctx, 422, scim_errors=fields)
    except errors.VelyrixError as exc:
        fields = {"name": exc.message}
        forms.refuse(request, exc.http_status, exc.code, fields)
        return admin_identity.show(request, ctx, exc.http_status, scim_errors=fields)
    return admin_identity.show(request, ctx, 201, scim_created=json.loads(bytes(answer.body)))


@router.post("/console/identity/scim-tokens/{key_id}/revoke", name="console.scim_tokens.revoke")
def revoke_token(key_id: str, ctx: Ctx = Depends(access.acts("scim:provision"))) -> Response:
    """Revoke a SCIM token (``api_keys.revoke_key``); another kind of key is not one (404)."""
    ctx.principal.require("keys:admin")
    if api_keys.get_key(key_id, ctx)["role"] != SCIM_ROLE:
        raise errors.NotFoundError(kind="SCIM token", name=key_id)
    api_keys.revoke_key(key_id, Response(), ctx)
    return RedirectResponse(admin_identity.PAGE_PATH, status_code=303)


@router.post("/console/identity/policy", name="console.identity_policy.set")
def set_policy(
    request: Request,
    ctx: Ctx = Depends(access.acts("tenants:write")),
    mfa_required: str = Form("", max_length=8),
    totp_allowed: str = Form("", max_length=8),
    step_up_s: str = Form("", max_length=12),
    idle_timeout_s: str = Form("", max_length=12),
    absolute_timeout_s: str = Form("", max_length=12),
) -> Response:
    """``identity_policy.set_policy`` with the form (unticked boxes: off; empty numbers: unchanged)."""
    form = {"step_up_s": step_up_s, "idle_timeout_s": idle_timeout_s, "absolute_timeout_s": absolute_timeout_s}
    given = {k: v.strip() for k, v in form.items() if v.strip()}
    try:
        body = identity_policy.PolicyBody.model_validate(
            {"mfa_required": mfa_required == "on", "totp_allowed": totp_allowed == "on", **given}
        )
        identity_policy.set_policy(body, ctx)
    except pydantic.ValidationError as exc:
        fields = forms.field_errors(exc, POLICY_FIELDS)
        forms.refuse(request, 422, "invalid_input", fields)
        return admin_identity.show(request, ctx, 422, policy_form=form, policy_errors=fields)
    return RedirectResponse(admin_identity.PAGE_PATH, status_code=303)
