"""The console's single sign-on settings: the tenant's identity providers (OIDC issuer and client id, or a
SAML IdP; the allowed e-mail domains; how a claim and groups map to roles), never a client secret shown
back, through the API's own routes (``identity_providers``); a form to add one and a button to remove one
(owners). The SCIM tokens and the MFA policy on the same page are ``admin_scim``'s forms; ``show`` renders
the page for both."""

from __future__ import annotations

import re
from typing import Any

import pydantic
from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from velyrix import errors
from velyrix.console import access, forms, render
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.api.routes import api_keys, identity_policy, identity_providers
from velyrix.controlplane.identity import members

router = APIRouter(include_in_schema=False)
PAGE_PATH = render.PREFIX + "/identity"
PROVIDER_FIELDS = tuple(identity_providers.ProviderIn.model_fields)
_SPLIT = re.compile(r"[\s,]+")


def show(request: Request, ctx: Ctx, status: int = 200, **values: Any) -> Response:
    """The settings page: providers, SCIM tokens (for ``keys:read``), the MFA policy; ``values`` carry a
    form's entries and errors (``provider_form``, ``provider_errors``, ``policy_errors``, ``scim_errors``,
    ``scim_created``)."""
    scopes = ctx.principal.scopes
    providers = identity_providers.list_providers(ctx, cursor=None, limit=200)["items"]
    tokens = api_keys.list_keys(ctx, role="scim", cursor=None, limit=200)["items"] if "keys:read" in scopes else []
    return render.page(
        request,
        "admin_identity.html",
        status,
        providers=providers,
        tokens=tokens,
        policy=identity_policy.get_policy(ctx, tenant_id=None),
        can_write="tenants:write" in scopes,
        can_keys={"keys:admin", "scim:provision"} <= scopes,
        roles=members.MEMBER_ROLES,
        provider_form=values.pop("provider_form", {"kind": "oidc", "groups_claim": "groups", "default_role": "viewer"}),
        provider_errors=values.pop("provider_errors", {}),
        policy_form=values.pop("policy_form", {}),
        policy_errors=values.pop("policy_errors", {}),
        scim_errors=values.pop("scim_errors", {}),
        scim_created=values.pop("scim_created", None),
        title="Single sign-on and SCIM",
    )


@router.get("/console/identity", name="console.identity")
def identity_page(request: Request, ctx: Ctx = Depends(access.reads("tenants:read"))) -> Response:
    return show(request, ctx)


def mapping(text: str) -> dict[str, str]:
    """``group=role`` lines (or ``;``-separated) as a mapping; ValueError names the first bad line."""
    found: dict[str, str] = {}
    for n, line in enumerate(re.split(r"[\n;]", text), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"line {n}: expected NAME=ROLE, got {line.strip()[:60]!r}")
        found[key.strip()] = value.strip()
    return found


def _body(form: dict[str, str]) -> dict[str, Any]:
    """The API's body from the form's text (lists and mappings parsed; ValueError: which field, why)."""
    body: dict[str, Any] = {k: v for k, v in form.items() if k not in ("allowed_domains", "role_map", "group_map")}
    body["allowed_domains"] = [d for d in _SPLIT.split(form["allowed_domains"]) if d]
    for name in ("role_map", "group_map"):
        try:
            body[name] = mapping(form[name])
        except ValueError as exc:
            raise ValueError(f"{name}|{exc}") from None
    return body


@router.post("/console/identity/providers", name="console.identity_providers.create")
def create_provider(
    request: Request,
    ctx: Ctx = Depends(access.acts("tenants:write")),
    name: str = Form("", max_length=63),
    kind: str = Form("oidc", max_length=8),
    issuer: str = Form("", max_length=500),
    client_id: str = Form("", max_length=200),
    client_secret: str = Form("", max_length=500),
    saml_metadata: str = Form("", max_length=200_000),
    allowed_domains: str = Form("", max_length=5000),
    role_claim: str = Form("", max_length=100),
    role_map: str = Form("", max_length=10_000),
    groups_claim: str = Form("groups", max_length=100),
    group_map: str = Form("", max_length=20_000),
    default_role: str = Form("viewer", max_length=32),
) -> Response:
    """``identity_providers.create`` with the form; the client secret is never put back in the page."""
    form = {"name": name, "kind": kind, "issuer": issuer, "client_id": client_id, "saml_metadata": saml_metadata}
    form |= {"allowed_domains": allowed_domains, "role_claim": role_claim, "role_map": role_map}
    form |= {"groups_claim": groups_claim, "group_map": group_map, "default_role": default_role}
    fields: dict[str, str] = {}
    try:
        body = identity_providers.ProviderIn.model_validate({**_body(form), "client_secret": client_secret})
        identity_providers.create(body, ctx)
    except ValueError as exc:  # pydantic.ValidationError is one
        if isinstance(exc, pydantic.ValidationError):
            fields, status, code = forms.field_errors(exc, PROVIDER_FIELDS), 422, "invalid_input"
        else:
            where, _, why = str(exc).partition("|")
            fields, status, code = {where: why}, 422, "invalid_input"
    except errors.VelyrixError as exc:
        where = "name" if isinstance(exc, errors.ConflictError) else _field_of(exc)
        fields, status, code = {where: exc.message}, exc.http_status, exc.code
    if fields:
        forms.refuse(request, status, code, fields)
        return show(request, ctx, status, provider_form=form, provider_errors=fields)
    return RedirectResponse(PAGE_PATH, status_code=303)


def _field_of(exc: errors.VelyrixError) -> str:
    """The form field an API refusal is about (its message names it), else ``form``."""
    for name in ("client_id", "saml_metadata", "issuer"):
        if name in exc.message or name.replace("_", " ") in exc.message.lower():
            return name
    return "saml_metadata" if "metadata" in exc.message.lower() else "form"


@router.post("/console/identity/providers/{provider_id}/delete", name="console.identity_providers.delete")
def delete_provider(provider_id: str, ctx: Ctx = Depends(access.acts("tenants:write"))) -> Response:
    """``identity_providers.delete`` (its pending logins with it), then back to the page."""
    identity_providers.delete(provider_id, ctx)
    return RedirectResponse(PAGE_PATH, status_code=303)
