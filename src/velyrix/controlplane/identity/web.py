"""Browser routes of single sign-on: ``/auth/{tenant}/login`` (to the tenant's identity provider),
``/auth/oidc/callback`` (back from it: a session cookie), ``/auth/logout`` (ends the session
server-side), ``/auth/cli/token`` (``velyrix login --sso``'s one-time code for a key) and ``/ui``, the
signed-in page (the user, the tenant's clusters, logout and key forms with their CSRF token)."""

from __future__ import annotations

import datetime as dt
import html
import urllib.parse
from types import SimpleNamespace
from typing import Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from velyrix import errors
from velyrix.controlplane.api import context, lean_route
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import IdentityProvider
from velyrix.controlplane.identity import keyuse, login, mfa, mfa_login, oidc, provider_staff, sessions

router = APIRouter(tags=["identity"])
SECURITY_PAGE = "/ui/security"
"""Where a session that can read nothing yet lands: the page that registers a security key (``mfa_web``)."""


@router.get("/auth/{tenant}/login", name="auth.oidc_login", include_in_schema=False)
def oidc_login(
    tenant: str,
    request: Request,
    provider: str | None = None,
    cli_redirect: str = "",
    cli_challenge: str = "",
    next: str = Query("", max_length=login.MAX_NEXT_CHARS),
) -> Response:
    """Send the browser to the tenant's OpenID provider (authorization code + PKCE), or, for a tenant that
    signs in through SAML only, to ``/auth/saml/{provider}/login`` (so ``velyrix login --sso`` works for both).
    ``next``: the console page to land on after sign-in (a path under ``/console``; anything else lands on
    ``/console/clusters``: ``login.console_target``)."""
    session = login.open_session(request)
    try:
        idp = login.provider_named(session, tenant, provider, "oidc")
    except errors.NotFoundError as missing:
        try:
            saml_idp = login.provider_named(session, tenant, provider, "saml")
        except errors.NotFoundError:
            raise missing from None
        target = request.url_for("auth.saml_login", provider=saml_idp.id)
        cli = {k: v for k, v in (("cli_redirect", cli_redirect), ("cli_challenge", cli_challenge), ("next", next)) if v}
        return RedirectResponse(str(target.include_query_params(**cli)), status_code=303)
    begun = oidc.start(idp, str(request.url_for("auth.oidc_callback")))
    login.begin(
        session,
        idp,
        begun.state,
        nonce=begun.nonce,
        verifier=begun.verifier,
        cli_redirect=cli_redirect,
        cli_challenge=cli_challenge,
        next_path=next,
    )
    session.commit()
    return RedirectResponse(begun.url, status_code=303)


@router.get("/auth/oidc/callback", name="auth.oidc_callback", include_in_schema=False)
def oidc_callback(
    request: Request, state: str = "", code: str = "", error: str = "", iss: str | None = None
) -> Response:
    """Finish an OIDC login: spend the state, exchange the code, validate the ID token, sign the user in."""
    session = login.open_session(request)
    info = context.request_info(request)
    tenant_id: str | None = None
    try:
        flow, idp = login.spend(session, state)
        tenant_id = idp.tenant_id
        if error:
            raise errors.IdentityError(f"the identity provider answered: {error[:100]}", reason="provider_refused")
        if iss is not None and iss != idp.issuer:  # RFC 9207: mix-up defence
            raise errors.IdentityError("callback from another issuer", reason="token_wrong_issuer")
        id_token = oidc.exchange(idp, code, str(request.url_for("auth.oidc_callback")), flow.code_verifier)
        claims = _validated(id_token, idp, flow.nonce)
        staff = provider_staff.is_provider_tenant(session, idp.tenant_id)
        user = login.upsert_user(session, idp, oidc.identity(idp, claims, provider_roles=staff))
    except errors.VelyrixError as exc:
        session.rollback()
        login.record(session, info, tenant_id=tenant_id, action="auth.login", target="login/oidc", refusal=exc)
        session.commit()
        raise
    return finish(request, session, flow, user, "oidc")


def _validated(id_token: str, idp: IdentityProvider, nonce: str) -> dict[str, Any]:
    try:
        return oidc.validate_id_token(
            id_token, oidc.keys(idp.issuer), issuer=idp.issuer, client_id=idp.client_id, nonce=nonce
        )
    except errors.IdentityError as exc:
        if exc.code != "identity_token_signature_invalid":
            raise
        keys = oidc.keys(idp.issuer, refresh=True)  # the provider may have rotated its key
        return oidc.validate_id_token(id_token, keys, issuer=idp.issuer, client_id=idp.client_id, nonce=nonce)


def finish(request: Request, session: Any, flow: Any, user: Any, method: str, second: str = "") -> Response:
    """Sign ``user`` in after a login through ``flow``: a session cookie and ``/ui`` (or the console page
    the login was started for: ``login.begin``'s ``next_path``), or the CLI's
    loopback callback with a one-time code. A user with a second factor who has not yet proved it
    (``second``: the factor used, empty for none) is sent to ``/auth/mfa`` with a pending login instead."""
    info = context.request_info(request)
    actor = f"user:{user.id} ({user.user_name})"
    if not second and (asked := mfa.factors(session, user)):
        _, pending = mfa_login.hold(session, flow, user, method)
        login.record(
            session,
            info,
            tenant_id=user.tenant_id,
            action="auth.mfa_required",
            target=f"users/{user.id}",
            actor=actor,
            detail={"method": method, "factors": asked},
        )
        session.commit()
        response = RedirectResponse("/auth/mfa", status_code=303)
        response.headers["set-cookie"] = mfa_login.set_cookie_header(pending)
        return response
    if flow.cli_redirect:
        code = login.cli_code(session, flow, user)
        login.record(
            session, info, tenant_id=user.tenant_id, action="auth.login", target=f"users/{user.id}", actor=actor
        )
        session.commit()
        return RedirectResponse(flow.cli_redirect + "?" + urllib.parse.urlencode({"code": code}), status_code=303)
    row, secret, max_age = login.start_session(session, user, method, mfa=bool(second))
    detail = {"method": method, "session": row.id, "role": user.role, "second_factor": second or None}
    login.record(
        session,
        info,
        tenant_id=user.tenant_id,
        action="auth.login",
        target=f"users/{user.id}",
        actor=actor,
        detail=detail,
    )
    session.commit()
    response = RedirectResponse(_landing(session, flow, user, row), status_code=303)
    response.headers["set-cookie"] = sessions.set_cookie_header(secret, max_age)
    return response


def _landing(session: Any, flow: Any, user: Any, row: Any) -> str:
    """Where a new browser session lands: the console page the login was started for (``next``) or
    ``/ui``; a session with no scope at all (provider staff before a second factor:
    ``provider_staff.rights``) lands on ``SECURITY_PAGE`` to register a security key, not on a 403."""
    _, scopes = provider_staff.rights(
        session, SimpleNamespace(tenant_id=user.tenant_id, role=user.role, mfa_at=row.mfa_at)
    )
    if not scopes:
        return SECURITY_PAGE
    landing = flow.result.get("next") if isinstance(flow.result, dict) else None
    return login.console_target(str(landing)) if landing else "/ui"


@router.post("/auth/logout", name="auth.logout", include_in_schema=False)
def logout(request: Request, csrf: str = Form("", max_length=200)) -> Response:
    """End the session server-side (its cookie answers 401 from now on) and clear the cookie."""
    secret = request.cookies.get(sessions.COOKIE) or ""
    session = login.open_session(request)
    principal = sessions.authenticate(session, secret)
    request.state.principal = principal
    sessions.check_csrf(secret, csrf)
    sessions.end(session, principal.key_id, "logout")
    login.record(
        session,
        context.request_info(request),
        tenant_id=principal.tenant_id,
        action="auth.logout",
        target=f"sessions/{principal.key_id}",
        actor=principal.actor,
    )
    session.commit()
    request.state.audited = True
    response = HTMLResponse(_page("Signed out", "<p>You are signed out. <a href='/'>Home</a></p>"))
    response.headers["set-cookie"] = sessions.clear_cookie_header()
    return response


class CliToken(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str = Field(min_length=10, max_length=200)
    code_verifier: str = Field(min_length=43, max_length=128)


@router.post("/auth/cli/token", name="auth.cli_token", include_in_schema=False)
def cli_token(body: CliToken, request: Request) -> dict[str, Any]:
    """The API key of a ``velyrix login --sso`` (the user's role, twelve hours, revoked with the user)."""
    session = login.open_session(request)
    flow, user = login.exchange_cli_code(session, body.code, body.code_verifier)
    expires = models.utcnow() + dt.timedelta(seconds=login.CLI_KEY_TTL_S)
    key, secret = principals.issue_key(
        session,
        tenant_id=user.tenant_id,
        name=f"{user.user_name} (velyrix login --sso)",
        role=user.role,
        expires_at=expires,
    )
    keyuse.set_details(session, key.id, description="velyrix login --sso", user_id=user.id)
    login.record(
        session,
        context.request_info(request),
        tenant_id=user.tenant_id,
        action="auth.cli_token",
        target=f"api-keys/{key.id}",
        actor=f"user:{user.id} ({user.user_name})",
    )
    session.commit()
    request.state.audited = True
    return {"api_key": secret, "key_id": key.id, "user": user.user_name, "role": user.role, "expires_at": expires}


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>"
        + html.escape(title)
        + " - Velyrix</title></head><body><h1>"
        + html.escape(title)
        + "</h1>"
        + body
        + "</body></html>"
    )


@lean_route.get(router, "/ui", name="ui.home", include_in_schema=False)
async def home(request: Request, ctx: Ctx = Depends(require("clusters:read"))) -> HTMLResponse:
    """The signed-in page: who, which tenant, its clusters; logout and owner-key forms (CSRF-protected).

    Async, its read through ``ctx.read`` (on the event loop for SQLite, else a worker thread), like
    ``clusters.get``: a sync route would hold the dependency's pooled connection from a worker thread
    while further requests' dependencies wait for the pool on the event loop, which then cannot finish
    the first ones (bench/bench_identity.py measured 0 req/s at 16 connections)."""
    p = ctx.principal
    rows = await ctx.read(lambda scope: scope.columns(models.Cluster, ("name", "region", "phase"), 200))
    items = "".join(
        f"<tr><td class='cluster'>{html.escape(c.name)}</td><td>{html.escape(c.region)}</td>"
        f"<td>{html.escape(c.phase)}</td></tr>"
        for c in rows
    )
    csrf = sessions.csrf_token(request.cookies.get(sessions.COOKIE, "")) if p.user_id else ""
    body = (
        f"<p id='who'>Signed in as <b>{html.escape(p.name)}</b> ({html.escape(p.role)})"
        f" of tenant <b id='tenant'>{html.escape(p.tenant_id or 'provider')}</b></p>"
        f"<table id='clusters'><tr><th>cluster</th><th>region</th><th>phase</th></tr>{items}</table>"
        f"<form method='post' action='/auth/logout'><input type='hidden' name='csrf' value='{csrf}'>"
        "<button id='logout' type='submit'>Sign out</button></form>"
        "<p><a id='security' href='/ui/security'>Security keys and owner keys</a></p>"
        "<p><a id='console' href='/console/clusters'>Open the console</a></p>"
    )
    return HTMLResponse(_page("Velyrix", body))
