"""The second step of a login: after the identity provider vouched for a user who has a second factor,
no session is made yet. A pending login (a ``LoginFlow`` row, ten minutes, single use) is held under
the browser cookie ``velyrix_mfa`` (Path ``/auth/mfa``), and ``/auth/mfa`` asks for the security key
(or a TOTP or recovery code where allowed); only a verified factor turns it into a session."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import LoginFlow, User

COOKIE = "velyrix_mfa"
PENDING_TTL_S = 600


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def hold(session: orm.Session, flow: LoginFlow, user: User, method: str) -> tuple[LoginFlow, str]:
    """A pending login of ``user`` (through ``flow``'s provider, for a browser or the CLI's loopback);
    returns ``(row, cookie secret)``."""
    now = models.utcnow()
    secret = secrets.token_urlsafe(32)
    row = LoginFlow(
        state_sha256=_sha("mfa:" + secret),
        provider_id=flow.provider_id,
        tenant_id=flow.tenant_id,
        cli_redirect=flow.cli_redirect,
        cli_challenge=flow.cli_challenge,
        result={"stage": "mfa", "user_id": user.id, "method": method, **_landing(flow)},
        created_at=now,
        expires_at=now + dt.timedelta(seconds=PENDING_TTL_S),
    )
    session.add(row)
    session.flush()
    return row, secret


def _landing(flow: LoginFlow) -> dict[str, str]:
    """The console page the login was started for (``login.begin``'s ``next``), carried to its end."""
    target = flow.result.get("next") if isinstance(flow.result, dict) else None
    return {"next": str(target)} if target else {}


def pending(session: orm.Session, secret: str | None) -> tuple[LoginFlow, User]:
    """The pending login of the cookie and its user; 401 ``identity_mfa_pending_invalid`` when there is
    none, it was finished or expired, or its user was deactivated meanwhile."""
    flow = session.scalar(sa.select(LoginFlow).where(LoginFlow.state_sha256 == _sha("mfa:" + (secret or ""))))
    now = models.utcnow()
    user = session.get(User, flow.result.get("user_id", "")) if flow is not None else None
    if flow is None or flow.used_at is not None or flow.expires_at <= now or user is None or not user.active:
        raise errors.IdentityError(
            "no login is waiting for a second factor (finished, expired or never started)",
            reason="mfa_pending_invalid",
            hint="sign in again",
        )
    return flow, user


def set_cookie_header(secret: str) -> str:
    return f"{COOKIE}={secret}; Path=/auth/mfa; Max-Age={PENDING_TTL_S}; Secure; HttpOnly; SameSite=Lax"


def clear_cookie_header() -> str:
    return f"{COOKIE}=; Path=/auth/mfa; Max-Age=0; Secure; HttpOnly; SameSite=Lax"
