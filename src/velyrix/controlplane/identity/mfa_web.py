"""Routes of the second factor. A login's second step (pending-login cookie ``velyrix_mfa``):
``GET /auth/mfa``, ``POST /auth/mfa/login/options``, ``POST /auth/mfa/login``. A signed-in session
(cookie plus ``X-CSRF-Token``): ``/auth/mfa/webauthn/register[/options]``, ``/auth/mfa/step-up[/options]``,
``/auth/mfa/totp/{enroll,confirm}``, ``/auth/mfa/recovery-codes`` and the page ``/ui/security``. Each
POST leaves one audit event (``mfa.*``; a refusal is recorded by the problem handler under the route's
name, outcome ``denied``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from velyrix import errors
from velyrix.controlplane.api import context
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import User
from velyrix.controlplane.identity import login, mfa, mfa_login, mfa_pages, sessions, web, webauthn_rp

router = APIRouter(tags=["identity"])


class Assertion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    credential: dict[str, Any] = Field(description="the browser's PublicKeyCredential as JSON")
    name: str = Field("security key", max_length=200)


class SecondFactor(BaseModel):
    model_config = ConfigDict(extra="forbid")
    credential: dict[str, Any] | None = None
    totp: str | None = Field(None, max_length=12)
    recovery_code: str | None = Field(None, max_length=40)


class Code(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str = Field(min_length=6, max_length=12)


def _signed_in(request: Request) -> tuple[Any, Principal, User]:
    """(db session, principal, user) of the browser session, CSRF-checked."""
    secret = request.cookies.get(sessions.COOKIE) or ""
    db = login.open_session(request)
    principal = sessions.authenticate(db, secret)
    request.state.principal = principal
    sessions.check_csrf(secret, request.headers.get(sessions.CSRF_HEADER))
    user = db.get(User, principal.user_id)
    assert user is not None
    return db, principal, user


def _done(request: Request, db: Any, principal: Principal | None, action: str, target: str, **detail: Any) -> None:
    """Commit with the success audit event of ``action``."""
    login.record(
        db,
        context.request_info(request),
        tenant_id=principal.tenant_id if principal else detail.pop("tenant_id", None),
        action=action,
        target=target,
        actor=principal.actor if principal else detail.pop("actor", None),
        detail=detail,
    )
    db.commit()
    request.state.audited = True


def _tooled(limit: int, credential: dict[str, Any] | None) -> None:
    if credential is not None and len(str(credential)) > limit:
        raise errors.InvalidInputError("the credential is too large", hint=f"at most {limit} bytes")


@router.get("/auth/mfa", name="auth.mfa_page", include_in_schema=False)
def second_step_page(request: Request) -> HTMLResponse:
    db = login.open_session(request)
    _, user = mfa_login.pending(db, request.cookies.get(mfa_login.COOKIE))
    totp = sessions.policy(db, user.tenant_id).totp_allowed
    return HTMLResponse(mfa_pages.second_step(user.user_name, mfa.factors(db, user), totp))


@router.post("/auth/mfa/login/options", name="mfa.login_options", include_in_schema=False)
def second_step_options(request: Request) -> dict[str, Any]:
    db = login.open_session(request)
    flow, user = mfa_login.pending(db, request.cookies.get(mfa_login.COOKIE))
    options = mfa.assertion_options(db, user, "login", flow_id=flow.id)
    actor = f"user:{user.id} ({user.user_name})"
    _done(
        request, db, None, "mfa.challenge", f"users/{user.id}", purpose="login", tenant_id=user.tenant_id, actor=actor
    )
    return options


@router.post("/auth/mfa/login", name="mfa.login", include_in_schema=False)
def second_step(body: SecondFactor, request: Request) -> Response:
    """Finish a login with a security key's assertion, a TOTP code (where allowed) or a recovery code:
    the session cookie and where to go (``redirect``)."""
    _tooled(webauthn_rp.MAX_CREDENTIAL_JSON, body.credential)
    db = login.open_session(request)
    flow, user = mfa_login.pending(db, request.cookies.get(mfa_login.COOKIE))
    if body.credential is not None:
        mfa.verify_assertion(db, user, "login", body.credential, flow_id=flow.id)
        factor = "webauthn"
    elif body.totp:
        mfa.totp_verify(db, user, body.totp)
        factor = "totp"
    elif body.recovery_code:
        mfa.use_recovery_code(db, user, body.recovery_code)
        factor = "recovery_code"
    else:
        raise errors.InvalidInputError("send a credential, a totp code or a recovery_code")
    flow.used_at = models.utcnow()
    request.state.audited = True  # finish records auth.login
    done = web.finish(request, db, flow, user, str(flow.result.get("method", "oidc")), second=factor)
    answer = JSONResponse({"redirect": done.headers["location"], "second_factor": factor})
    if "set-cookie" in done.headers:
        answer.headers.append("set-cookie", done.headers["set-cookie"])
    answer.headers.append("set-cookie", mfa_login.clear_cookie_header())
    return answer


@router.post("/auth/mfa/webauthn/register/options", name="mfa.register_options", include_in_schema=False)
def register_options(request: Request) -> dict[str, Any]:
    db, principal, user = _signed_in(request)
    options = mfa.registration_options(db, user, principal.key_id)
    _done(request, db, principal, "mfa.challenge", f"users/{user.id}", purpose="register")
    return options


@router.post("/auth/mfa/webauthn/register", name="mfa.register", status_code=201, include_in_schema=False)
def register(body: Assertion, request: Request) -> dict[str, Any]:
    _tooled(webauthn_rp.MAX_CREDENTIAL_JSON, body.credential)
    db, principal, user = _signed_in(request)
    key = mfa.register(db, user, principal.key_id, body.credential, body.name)
    _done(request, db, principal, "mfa.register", f"mfa-credentials/{key.id}", kind="webauthn", name=key.name)
    return {"id": key.id, "name": key.name, "kind": "webauthn"}


@router.post("/auth/mfa/step-up/options", name="mfa.step_up_options", include_in_schema=False)
def step_up_options(request: Request) -> dict[str, Any]:
    db, principal, user = _signed_in(request)
    options = mfa.assertion_options(db, user, "step_up", session_id=principal.key_id)
    _done(request, db, principal, "mfa.challenge", f"users/{user.id}", purpose="step_up")
    return options


@router.post("/auth/mfa/step-up", name="mfa.step_up", include_in_schema=False)
def step_up(body: Assertion, request: Request) -> dict[str, Any]:
    """A fresh assertion: sensitive actions are allowed for the policy's ``step_up_s`` from now."""
    _tooled(webauthn_rp.MAX_CREDENTIAL_JSON, body.credential)
    db, principal, user = _signed_in(request)
    key = mfa.verify_assertion(db, user, "step_up", body.credential, session_id=principal.key_id)
    mfa.mark(db, principal.key_id, step_up=True)
    window = sessions.policy(db, user.tenant_id).step_up_s or sessions.DEFAULT_STEP_UP_S
    _done(request, db, principal, "mfa.step_up", f"mfa-credentials/{key.id}", sign_count=key.sign_count)
    return {"step_up_s": window, "credential": key.id}


@router.post("/auth/mfa/totp/enroll", name="mfa.totp_enroll", include_in_schema=False)
def totp_enroll(request: Request) -> dict[str, Any]:
    db, principal, user = _signed_in(request)
    seed, uri = mfa.totp_enroll(db, user)
    _done(request, db, principal, "mfa.totp_enroll", f"users/{user.id}")
    return {"secret": seed, "otpauth_uri": uri}


@router.post("/auth/mfa/totp/confirm", name="mfa.totp_confirm", include_in_schema=False)
def totp_confirm(body: Code, request: Request) -> dict[str, Any]:
    db, principal, user = _signed_in(request)
    row = mfa.totp_confirm(db, user, body.code)
    _done(request, db, principal, "mfa.totp_confirm", f"mfa-credentials/{row.id}")
    return {"id": row.id, "kind": "totp"}


@router.post("/auth/mfa/recovery-codes", name="mfa.recovery_codes", status_code=201, include_in_schema=False)
def recovery_codes(request: Request) -> dict[str, Any]:
    """Ten new recovery codes, shown this once (a step-up first when the user has a security key)."""
    db, principal, user = _signed_in(request)
    if mfa.credentials(db, user.id):
        mfa.check_step_up(db, principal, "making recovery codes")
    codes = mfa.new_recovery_codes(db, user)
    _done(request, db, principal, "mfa.recovery_codes", f"users/{user.id}", count=len(codes))
    return {"codes": codes}


@router.get("/ui/security", name="ui.security", include_in_schema=False)
def security_page(request: Request) -> HTMLResponse:
    secret = request.cookies.get(sessions.COOKIE) or ""
    db = login.open_session(request)
    principal = sessions.authenticate(db, secret)
    keys = [(k.id, k.name) for k in mfa.credentials(db, principal.user_id or "")]
    return HTMLResponse(mfa_pages.security(principal.name, keys, sessions.csrf_token(secret)))
