"""What every single sign-on ends with, whatever the protocol: the pending flow checked and spent once,
the user found or created in the tenant (refused when deactivated), the role the provider's claims map
to, a browser session (or, for ``velyrix login --sso``, a one-time code the CLI exchanges for a key), and
an audit event for each login and each refusal."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane import audit
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import IdentityProvider, LoginFlow, User
from velyrix.controlplane.identity import oidc, sessions

FLOW_TTL_S = 600
CLI_KEY_TTL_S = 12 * 3600
LOOPBACK_PREFIXES = ("http://127.0.0.1:", "http://localhost:", "http://[::1]:")
CONSOLE_PREFIX = "/console"
CONSOLE_LANDING = "/console/clusters"
"""Where a browser lands after sign-in when the ``next`` it carried was not a console path."""
MAX_NEXT_CHARS = 500
_NEXT_CHARS = re.compile(r"^[A-Za-z0-9/_.~%=&?+,;:@!$'()*-]*$")


def open_session(request: Any) -> orm.Session:
    """A database session for a login route (closed by ``RequestIdMiddleware`` after the answer)."""
    session: orm.Session = request.app.state.sessionmaker()
    request.state.db = session
    return session


def provider_named(session: orm.Session, tenant: str, name: str | None, kind: str) -> IdentityProvider:
    """The tenant's identity provider of ``kind`` (called ``name``, else its first); 404 otherwise."""
    stmt = (
        sa.select(IdentityProvider)
        .join(models.Tenant, models.Tenant.id == IdentityProvider.tenant_id)
        .where(models.Tenant.name == tenant, IdentityProvider.kind == kind)
    )
    if name:
        stmt = stmt.where(IdentityProvider.name == name)
    found = session.scalars(stmt.order_by(IdentityProvider.id).limit(1)).first()
    if found is None:
        raise errors.NotFoundError(kind=f"{kind.upper()} identity provider of tenant", name=tenant)
    return found


def forget_provider(scope: Any, provider: IdentityProvider) -> None:
    """Delete ``provider`` (read through ``scope``) with its pending logins."""
    scope.session.execute(sa.delete(LoginFlow).where(LoginFlow.provider_id == provider.id))
    scope.delete(provider)


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def console_target(value: str) -> str:
    """``value`` when it is a same-origin relative path under ``/console`` (``/console/clusters/42/nodes``,
    with its query), else ``CONSOLE_LANDING``: no scheme, no host, no ``//`` or backslash, no dot
    segment, nothing but URL characters, at most ``MAX_NEXT_CHARS`` (an open redirect goes nowhere)."""
    path = value.split("?", 1)[0]
    ok = (
        len(value) <= MAX_NEXT_CHARS
        and bool(_NEXT_CHARS.match(value))
        and (path == CONSOLE_PREFIX or path.startswith(CONSOLE_PREFIX + "/"))
        and "//" not in path
        and "/./" not in path + "/"
        and "/../" not in path + "/"
        and "%2f" not in path.lower()
        and "%5c" not in path.lower()
        and "%2e" not in path.lower()
    )
    return value if ok else CONSOLE_LANDING


def check_cli_redirect(url: str) -> str:
    """``url`` when it is a loopback callback of ``velyrix login --sso`` (RFC 8252 section 7.3)."""
    if url and (not url.startswith(LOOPBACK_PREFIXES) or len(url) > 200 or any(c in url for c in "\r\n\"'<> ")):
        raise errors.IdentityError(
            "cli_redirect must be an http://127.0.0.1:PORT/ loopback address",
            reason="redirect_not_loopback",
            status=400,
        )
    return url


def begin(
    session: orm.Session, provider: IdentityProvider, state: str, *, nonce: str = "", verifier: str = "", **cli: str
) -> LoginFlow:
    """Remember a login started through ``provider`` under ``state`` (ten minutes, single use); ``cli``:
    ``cli_redirect``, ``cli_challenge``, and ``next_path``, the console page to land on (``console_target``)."""
    now = models.utcnow()
    landing = cli.get("next_path", "")
    flow = LoginFlow(
        state_sha256=_sha(state),
        provider_id=provider.id,
        tenant_id=provider.tenant_id,
        nonce=nonce,
        code_verifier=verifier,
        cli_redirect=check_cli_redirect(cli.get("cli_redirect", "")),
        cli_challenge=cli.get("cli_challenge", "")[:200],
        created_at=now,
        expires_at=now + dt.timedelta(seconds=FLOW_TTL_S),
        result={"next": console_target(landing)} if landing else {},
    )
    session.add(flow)
    return flow


def spend(session: orm.Session, state: str) -> tuple[LoginFlow, IdentityProvider]:
    """The flow of ``state``, marked used (committed at once, so a replayed callback finds it spent);
    ``identity_state_invalid`` (400) when unknown, used or older than ten minutes."""
    flow = session.scalar(sa.select(LoginFlow).where(LoginFlow.state_sha256 == _sha(state or "")))
    now = models.utcnow()
    if flow is None or flow.used_at is not None or flow.expires_at <= now:
        raise errors.IdentityError(
            "unknown, used or expired login state (a replayed or forged callback?)",
            reason="state_invalid",
            status=400,
            hint="start the login again",
        )
    flow.used_at = now
    session.commit()
    provider = session.get(IdentityProvider, flow.provider_id)
    assert provider is not None
    return flow, provider


def upsert_user(session: orm.Session, provider: IdentityProvider, who: oidc.Identity) -> User:
    """The tenant's user called ``who.user_name`` (created on first login) with the role and groups of
    this login; ``identity_user_deactivated`` (403) for a user SCIM or an admin deactivated."""
    user = session.scalar(sa.select(User).where(User.tenant_id == provider.tenant_id, User.user_name == who.user_name))
    if user is None:
        user = User(tenant_id=provider.tenant_id, user_name=who.user_name, groups=[], scim={})
        session.add(user)
    elif not user.active:
        raise errors.IdentityError(f"user {who.user_name} is deactivated", reason="user_deactivated", status=403)
    user.display_name = who.display_name
    user.subject = who.subject
    user.role = who.role
    user.groups = who.groups
    session.flush()
    return user


def record(
    session: orm.Session,
    info: audit.RequestInfo,
    *,
    tenant_id: str | None,
    action: str,
    target: str,
    actor: str | None = None,
    refusal: errors.VelyrixError | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """One audit event of a login step (``refusal`` set: outcome denied with its status and code)."""
    event = audit.record(
        session,
        info,
        None,
        action=action,
        target=target,
        outcome="denied" if refusal else "success",
        status_code=refusal.http_status if refusal else 200,
        error_code=refusal.code if refusal else None,
        detail={**(detail or {}), **({"reason": refusal.message} if refusal else {})},
        tenant_id=tenant_id,
    )
    if actor:
        event.actor = actor


def cli_code(session: orm.Session, flow: LoginFlow, user: User) -> str:
    """A one-time code for the CLI's loopback callback; exchanged (with the PKCE verifier) by
    ``exchange_cli_code``."""
    code = secrets.token_urlsafe(32)
    flow.result = {"code_sha256": _sha(code), "user_id": user.id}
    return code


def exchange_cli_code(session: orm.Session, code: str, verifier: str) -> tuple[LoginFlow, User]:
    """The flow and user of a CLI one-time code; ``identity_code_invalid`` (400) when unknown, used,
    expired or the verifier does not match the challenge the CLI sent."""
    now = models.utcnow()
    flow = session.scalar(sa.select(LoginFlow).where(LoginFlow.result["code_sha256"].as_string() == _sha(code)))
    bad = flow is None or flow.expires_at <= now or flow.result.get("spent") or not flow.cli_challenge
    if bad or not secrets.compare_digest(oidc.s256(verifier), flow.cli_challenge):  # type: ignore[union-attr]
        raise errors.IdentityError("unknown, used or expired login code", reason="code_invalid", status=400)
    assert flow is not None
    flow.result = {**flow.result, "spent": True}
    user = session.get(User, flow.result["user_id"])
    if user is None or not user.active:
        raise errors.IdentityError("the user of this login is deactivated", reason="user_deactivated", status=403)
    return flow, user


def start_session(session: orm.Session, user: User, method: str, *, mfa: bool = False) -> tuple[Any, str, int]:
    """``(session row, cookie secret, cookie max-age in seconds)`` of a new browser session (``mfa``: its
    user proved a second factor at login)."""
    row, secret = sessions.start(session, user, method, mfa=mfa)
    return row, secret, int((row.expires_at - models.utcnow()).total_seconds())
