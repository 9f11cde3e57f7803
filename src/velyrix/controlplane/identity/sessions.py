"""Browser sessions: the cookie ``velyrix_session`` holds a random secret (Secure, HttpOnly,
SameSite=Lax), the database its SHA-256. A session ends at its absolute expiry, after the tenant's idle
timeout, at logout, or when its user is deactivated; each check runs on every request, so an ended
session answers 401 on the very next one. Form posts and session-authenticated API mutations carry a
CSRF token derived from the secret (``csrf_token``), which a cross-site page cannot read.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import TenantIdentityPolicy, User, UserSession
from velyrix.controlplane.identity import provider_staff

COOKIE = "velyrix_session"
CSRF_HEADER = "x-csrf-token"
TOUCH_INTERVAL_S = 60
"""``last_seen_at`` is written at most once a minute: the idle timeout is exact to that minute."""
DEFAULT_IDLE_S = 30 * 60
DEFAULT_ABSOLUTE_S = 12 * 3600
DEFAULT_STEP_UP_S = 300

_S, _U, _P = UserSession, User, TenantIdentityPolicy
_BY_SECRET = (
    sa.select(
        _S.id,
        _S.user_id,
        _S.tenant_id,
        _S.expires_at,
        _S.last_seen_at,
        _S.ended_at,
        _S.mfa_at,
        _U.user_name,
        _U.role,
        _U.active,
        _P.idle_timeout_s,
        _P.mfa_required,
    )
    .join(_U, _U.id == _S.user_id)
    .outerjoin(_P, _P.tenant_id == _S.tenant_id)
    .where(_S.secret_sha256 == sa.bindparam("digest"))
)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def csrf_token(secret: str) -> str:
    """The CSRF token of the session whose cookie is ``secret`` (HMAC-SHA256, hex)."""
    return hmac.new(secret.encode(), b"velyrix-csrf", hashlib.sha256).hexdigest()


def check_csrf(secret: str, presented: str | None) -> None:
    """403 ``identity_csrf_failed`` unless ``presented`` is the session's CSRF token."""
    if not presented or not hmac.compare_digest(csrf_token(secret), presented):
        raise errors.IdentityError(
            "the form or request lacks this session's CSRF token", reason="csrf_failed", status=403
        )


def policy(session: orm.Session, tenant_id: str) -> TenantIdentityPolicy:
    """The tenant's identity policy (the defaults when it has none stored)."""
    found = session.get(TenantIdentityPolicy, tenant_id)
    if found is not None:
        return found
    return TenantIdentityPolicy(
        tenant_id=tenant_id,
        mfa_required=True,
        totp_allowed=False,
        idle_timeout_s=DEFAULT_IDLE_S,
        absolute_timeout_s=DEFAULT_ABSOLUTE_S,
        step_up_s=DEFAULT_STEP_UP_S,
    )


def start(session: orm.Session, user: User, method: str, *, mfa: bool = False) -> tuple[UserSession, str]:
    """A new session of ``user`` (in the caller's transaction); returns ``(row, cookie secret)``."""
    now = models.utcnow()
    secret = secrets.token_urlsafe(32)
    row = UserSession(
        secret_sha256=digest(secret),
        user_id=user.id,
        tenant_id=user.tenant_id,
        method=method,
        created_at=now,
        last_seen_at=now,
        expires_at=now + dt.timedelta(seconds=policy(session, user.tenant_id).absolute_timeout_s),
        mfa_at=now if mfa else None,
    )
    session.add(row)
    session.flush()
    return row, secret


def _refusal(row: Any, now: dt.datetime) -> str | None:
    """Why the session row cannot be used now (``None`` when it can)."""
    if row.ended_at is not None:
        return "ended"
    if not row.active:
        return "user_deactivated"
    if row.expires_at <= now:
        return "expired"
    if row.last_seen_at + dt.timedelta(seconds=row.idle_timeout_s or DEFAULT_IDLE_S) <= now:
        return "idle"
    return None


@dataclass(frozen=True)
class Checked:
    """What ``check`` found, before any write: the principal (None when refused), the refusal to raise,
    and the write the finding calls for (``apply``): ``("touch", session id, None)`` to move
    ``last_seen_at`` on, ``("end", session id, reason)`` to end a session found idle, expired or of a
    deactivated user."""

    principal: Principal | None
    refusal: errors.VelyrixError | None = None
    write: tuple[str, str, str | None] | None = None
    at: dt.datetime | None = None


def check(
    conn: sa.Connection | orm.Session,
    secret: str,
    *,
    mutating: bool = False,
    csrf: str | None = None,
    first: Callable[[Any, dict[str, Any]], Any] | None = None,
) -> Checked:
    """The reads of ``authenticate`` (one query, no write): raises the refusals that need no write
    (unknown session, CSRF, MFA enrollment), returns the others in ``Checked.refusal``. ``first``: as
    for ``principals.authenticate``."""
    params = {"digest": digest(secret)}
    row = first(_BY_SECRET, params) if first is not None else conn.execute(_BY_SECRET, params).first()
    if row is None:
        raise errors.AuthenticationError("unknown or ended session", hint="log in again")
    now = models.utcnow()
    why = _refusal(row, now)
    if why is not None:
        refusal = errors.AuthenticationError(f"session {why.replace('_', ' ')}", hint="log in again")
        ends = why in ("expired", "idle", "user_deactivated")
        return Checked(None, refusal, ("end", row.id, why) if ends else None, now)
    if mutating:
        check_csrf(secret, csrf)
        if row.mfa_at is None and row.mfa_required is not False:
            raise errors.IdentityError(
                "the tenant's policy requires a second factor before changes",
                reason="mfa_enrollment_required",
                status=403,
                hint="register a security key at /ui/security, then sign in again",
            )
    tenant_id, scopes = provider_staff.rights(conn, row)
    principal = Principal(
        key_id=row.id,
        name=row.user_name,
        tenant_id=tenant_id,
        role=row.role,
        scopes=scopes,
        expires_at=row.expires_at,
        user_id=row.user_id,
        mfa_at=row.mfa_at,
    )
    due = (now - row.last_seen_at).total_seconds() >= TOUCH_INTERVAL_S
    return Checked(principal, None, ("touch", row.id, None) if due else None, now)


def apply(conn: sa.Connection | orm.Session, checked: Checked) -> None:
    """Carry out ``checked.write`` on ``conn`` (committed there); nothing when there is none."""
    if checked.write is None:
        return
    kind, session_id, reason = checked.write
    now = checked.at or models.utcnow()
    if kind == "end":
        _end(conn, session_id, reason or "ended", now)
        return
    conn.execute(sa.update(_S).where(_S.id == session_id).values(last_seen_at=now))
    conn.commit()


def outcome(checked: Checked) -> Principal:
    """The principal of ``checked``, or its refusal raised (after ``apply``)."""
    if checked.principal is None:
        assert checked.refusal is not None
        raise checked.refusal
    return checked.principal


def authenticate(
    conn: sa.Connection | orm.Session, secret: str, *, mutating: bool = False, csrf: str | None = None
) -> Principal:
    """The principal of a session cookie: the user with the scopes of their role. ``AuthenticationError``
    (401) when the session is unknown, ended, expired, idle or its user deactivated; a session found idle
    or expired is ended here (once), and ``last_seen_at`` is moved on at most once a minute. A
    ``mutating`` request must carry the CSRF token (403 ``identity_csrf_failed``) and, where the
    tenant's policy requires MFA, come from a session whose user proved a second factor (403
    ``identity_mfa_enrollment_required``: register a security key at ``/ui/security`` first).
    ``check``, then ``apply`` on the same ``conn``: the API does the read and the rare write apart
    (``api/context.py``)."""
    checked = check(conn, secret, mutating=mutating, csrf=csrf)
    apply(conn, checked)
    return outcome(checked)


def _end(conn: sa.Connection | orm.Session, session_id: str, reason: str, now: dt.datetime) -> None:
    """End the session and record it (audit action ``sessions.end``), committed on ``conn``."""
    ended = _rowcount(
        conn.execute(
            sa.update(_S).where(_S.id == session_id, _S.ended_at.is_(None)).values(ended_at=now, end_reason=reason)
        )
    )
    if ended:
        row = conn.execute(sa.select(_S.tenant_id, _S.user_id).where(_S.id == session_id)).one()
        conn.execute(
            sa.insert(models.AuditEvent).values(
                id=models.new_id("aud"),
                at=now,
                actor=f"user:{row.user_id}",
                key_id=session_id,
                tenant_id=row.tenant_id,
                action="sessions.end",
                target=f"sessions/{session_id}",
                request_id="session_" + session_id,
                source_address=None,
                outcome="success",
                status_code=200,
                error_code=None,
                detail={"reason": reason},
            )
        )
    conn.commit()


def end(session: orm.Session, session_id: str, reason: str) -> bool:
    """End one session (logout) in the caller's transaction; False when it had ended already."""
    now = models.utcnow()
    result = session.execute(
        sa.update(_S).where(_S.id == session_id, _S.ended_at.is_(None)).values(ended_at=now, end_reason=reason)
    )
    return bool(_rowcount(result))


def end_all(session: orm.Session, user_id: str, reason: str) -> int:
    """End every open session of ``user_id`` (deactivation) in the caller's transaction; returns how many."""
    now = models.utcnow()
    result = session.execute(
        sa.update(_S).where(_S.user_id == user_id, _S.ended_at.is_(None)).values(ended_at=now, end_reason=reason)
    )
    return _rowcount(result)


def _rowcount(result: Any) -> int:
    return int(result.rowcount)


def set_cookie_header(secret: str, max_age_s: int) -> str:
    """The ``Set-Cookie`` value of a session (``Secure``: browsers also accept it from http://localhost)."""
    return f"{COOKIE}={secret}; Path=/; Max-Age={max_age_s}; Secure; HttpOnly; SameSite=Lax"


def clear_cookie_header() -> str:
    return f"{COOKIE}=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax"
