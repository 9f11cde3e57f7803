"""Browser routes of SAML single sign-on: ``/auth/saml/{provider}/login`` (an AuthnRequest to the
tenant's IdP by HTTP-Redirect, its request id held as a login flow), ``/auth/saml/{provider}/acs`` (the
IdP's HTTP-POST answer: checked, then the same session or second-factor step as OIDC, ``web.finish``)
and ``/auth/saml/{provider}/metadata`` (the SP's metadata for the IdP's administrator).

Every login and every refusal is an audit event (``auth.login``, target ``login/saml``)."""

from __future__ import annotations

import hashlib
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from saml2.metadata import create_metadata_string
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.api import context
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import IdentityProvider, LoginFlow
from velyrix.controlplane.identity import login, provider_staff, saml, saml_checks, web

router = APIRouter(tags=["identity"])


def _provider(session: orm.Session, provider_id: str) -> IdentityProvider:
    found = session.get(IdentityProvider, provider_id)
    if found is None or found.kind != "saml":
        raise errors.NotFoundError(kind="SAML identity provider", name=provider_id[:64])
    return found


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


@router.get("/auth/saml/{provider}/login", name="auth.saml_login", include_in_schema=False)
def saml_login(
    provider: str,
    request: Request,
    cli_redirect: str = "",
    cli_challenge: str = "",
    next: str = Query("", max_length=login.MAX_NEXT_CHARS),
) -> Response:
    """Send the browser to the IdP with an AuthnRequest; its id is the flow's state (ten minutes, once);
    ``next``: the console page to land on afterwards (``login.console_target``)."""
    session = login.open_session(request)
    idp = _provider(session, provider)
    request_id, location = saml.start(idp, _base(request), relay_state=idp.id)
    flow = login.begin(session, idp, request_id, cli_redirect=cli_redirect, cli_challenge=cli_challenge, next_path=next)
    # the ACS and audience this request named, whatever Host comes later
    flow.result = {**flow.result, "base": _base(request)}
    session.commit()
    return RedirectResponse(location, status_code=303)


@router.get("/auth/saml/{provider}/metadata", name="auth.saml_metadata", include_in_schema=False)
def saml_metadata(provider: str, request: Request) -> Response:
    """The SP metadata (entity id, ACS, signed assertions wanted) to register at the IdP."""
    session = login.open_session(request)
    sp = saml.client(_provider(session, provider), _base(request))
    return Response(create_metadata_string(None, sp.config, valid=None), media_type="application/samlmetadata+xml")


def _spend(session: orm.Session, idp: IdentityProvider, request_id: str) -> LoginFlow:
    """The unspent login flow of ``request_id`` at ``idp``, marked used (committed at once)."""
    sha = hashlib.sha256(request_id.encode()).hexdigest()
    flow = session.scalar(sa.select(LoginFlow).where(LoginFlow.state_sha256 == sha))
    now = models.utcnow()
    if flow is None or flow.provider_id != idp.id:
        raise saml_checks.refused(
            "the response answers no login started here (unsolicited or forged InResponseTo)",
            "unsolicited",
            hint="start the login at Velyrix",
        )
    if flow.used_at is not None:
        raise saml_checks.refused("this login was already finished (a replayed response)", "replayed")
    if flow.expires_at <= now:
        raise saml_checks.refused("the login was started more than ten minutes ago", "flow_expired", hint="again")
    spent = session.execute(
        sa.update(LoginFlow).where(LoginFlow.id == flow.id, LoginFlow.used_at.is_(None)).values(used_at=now)
    )
    session.commit()  # at once: a response posted twice at the same moment finishes one login
    if getattr(spent, "rowcount", 0) != 1:
        raise saml_checks.refused("this login was already finished (a replayed response)", "replayed")
    return flow


@router.post("/auth/saml/{provider}/acs", name="auth.saml_acs", include_in_schema=False)
def saml_acs(
    provider: str,
    request: Request,
    SAMLResponse: str = Form("", max_length=saml_checks.MAX_RESPONSE_BYTES),
    RelayState: str = Form("", max_length=200),
) -> Response:
    """Check the IdP's response (shape, flow, signature, replay), then sign the user in as OIDC does."""
    session = login.open_session(request)
    info = context.request_info(request)
    tenant_id: str | None = None
    try:
        idp = _provider(session, provider)
        tenant_id = idp.tenant_id
        flow, user = _accept(session, idp, SAMLResponse)
    except errors.VelyrixError as exc:
        session.rollback()
        login.record(session, info, tenant_id=tenant_id, action="auth.login", target="login/saml", refusal=exc)
        session.commit()
        request.state.audited = True
        raise
    request.state.audited = True
    return web.finish(request, session, flow, user, "saml")


def _accept(session: orm.Session, idp: IdentityProvider, saml_response: str) -> tuple[LoginFlow, Any]:
    """The flow and user of a response that passes every check (the flow is spent whatever follows)."""
    now = models.utcnow()
    root = saml_checks.decode(saml_response)
    flow = _spend(session, idp, saml_checks.peek_in_response_to(root))
    base = str(flow.result.get("base", ""))
    shape = saml_checks.check(root, acs_url=saml.acs_url(base, idp), entity_id=saml.entity_id(base, idp), now=now)
    verified = saml.verify(idp, base, saml_response, shape)
    saml.remember(session, shape, now)
    staff = provider_staff.is_provider_tenant(session, idp.tenant_id)
    user = login.upsert_user(session, idp, saml.identity(idp, verified, provider_roles=staff))
    return flow, user
