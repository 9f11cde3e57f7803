"""Second factors of a user: WebAuthn security keys (user verification required for owners and provider
operators), TOTP codes where the tenant's policy allows them, and single-use recovery codes kept as
SHA-256; the tenant's MFA policy; and step-up, a fresh WebAuthn assertion within the policy's window
(``step_up_s``) before a sensitive action (creating an owner key, deleting a volume, setting a contract).

Every function works in the caller's transaction unless it says it commits. Refusals are
``IdentityError`` with stable codes (``identity_mfa_*``, ``identity_step_up_required``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from typing import Any, Protocol

import pyotp
import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import MfaCredential, TenantIdentityPolicy, User, UserSession
from velyrix.controlplane.identity import sessions
from velyrix.controlplane.identity import webauthn_rp as rp

UV_ROLES = frozenset({"owner", "operator"})
"""Roles whose security keys must verify the user (PIN or biometric), not only their presence."""
CHALLENGE_TTL_S = 300
RECOVERY_CODES = 10
MAX_WEBAUTHN_PER_USER = 10
TOTP_ISSUER = "Velyrix"


def uv_required(user: User) -> bool:
    return user.role in UV_ROLES


def _sha(value: str | bytes) -> str:
    return hashlib.sha256(value.encode() if isinstance(value, str) else value).hexdigest()


def credentials(session: orm.Session, user_id: str, kind: str = "webauthn") -> list[MfaCredential]:
    stmt = sa.select(MfaCredential).where(MfaCredential.user_id == user_id, MfaCredential.kind == kind)
    return list(session.scalars(stmt.order_by(MfaCredential.created_at)))


def factors(session: orm.Session, user: User) -> list[str]:
    """The second factors ``user`` can log in with under the tenant's policy (``webauthn``, ``totp``)."""
    found = ["webauthn"] if credentials(session, user.id) else []
    if sessions.policy(session, user.tenant_id).totp_allowed and credentials(session, user.id, "totp"):
        found.append("totp")
    return found


def _challenge(session: orm.Session, challenge: bytes, purpose: str, user: User, **bound: str | None) -> None:
    now = models.utcnow()
    session.add(
        models.MfaChallenge(
            challenge_sha256=_sha(challenge),
            purpose=purpose,
            user_id=user.id,
            session_id=bound.get("session_id"),
            flow_id=bound.get("flow_id"),
            created_at=now,
            expires_at=now + dt.timedelta(seconds=CHALLENGE_TTL_S),
        )
    )


def _spend(session: orm.Session, credential: dict[str, Any], purpose: str, user: User, **bound: str | None) -> Any:
    """``(challenge, origin)`` of the credential's client data once its challenge row, handed out for
    ``purpose`` to ``user`` (and the same session or login), is marked used and committed; 400
    ``identity_mfa_challenge_invalid`` for an unknown, spent, expired or foreign challenge (a replay)."""
    challenge, origin = rp.client_challenge(credential)
    row = session.scalar(sa.select(models.MfaChallenge).where(models.MfaChallenge.challenge_sha256 == _sha(challenge)))
    now = models.utcnow()
    ok = (
        row is not None
        and row.used_at is None
        and row.expires_at > now
        and row.purpose == purpose
        and row.user_id == user.id
        and all(getattr(row, k) == v for k, v in bound.items())
    )
    if not ok:
        raise errors.IdentityError(
            "unknown, used or expired WebAuthn challenge (a replayed assertion?)",
            reason="mfa_challenge_invalid",
            status=400,
            hint="ask the security key again",
        )
    assert row is not None
    row.used_at = now
    session.commit()
    return challenge, origin


def registration_options(session: orm.Session, user: User, session_id: str) -> dict[str, Any]:
    """Options for ``navigator.credentials.create`` (a new security key of ``user``)."""
    have = credentials(session, user.id)
    if len(have) >= MAX_WEBAUTHN_PER_USER:
        raise errors.IdentityError(
            f"at most {MAX_WEBAUTHN_PER_USER} security keys per user", reason="mfa_too_many_keys", status=409
        )
    options, challenge = rp.registration_options(
        rp.relying_party(),
        user_id=user.id,
        user_name=user.user_name,
        display_name=user.display_name,
        exclude=[c.credential_id for c in have],
        uv_required=uv_required(user),
    )
    _challenge(session, challenge, "register", user, session_id=session_id)
    return options


def register(session: orm.Session, user: User, session_id: str, credential: dict[str, Any], name: str) -> MfaCredential:
    """Store the security key of a verified registration (the challenge is spent first, committed)."""
    challenge, origin = _spend(session, credential, "register", user, session_id=session_id)
    made = rp.verify_registration(rp.relying_party(), credential, challenge, origin, uv_required=uv_required(user))
    if any(c.credential_id == made.credential_id for c in credentials(session, user.id)):
        raise errors.IdentityError("this security key is registered already", reason="mfa_key_known", status=409)
    row = MfaCredential(
        user_id=user.id,
        kind="webauthn",
        credential_id=made.credential_id,
        public_key=made.public_key,
        sign_count=made.sign_count,
        name=name,
    )
    session.add(row)
    session.flush()
    return row


def assertion_options(session: orm.Session, user: User, purpose: str, **bound: str | None) -> dict[str, Any]:
    """Options for ``navigator.credentials.get`` with ``user``'s keys; 409 ``identity_mfa_no_key``
    when the user has none (register one first)."""
    have = credentials(session, user.id)
    if not have:
        raise errors.IdentityError(
            "no security key is registered for this user", reason="mfa_no_key", status=409, hint="/ui/security"
        )
    options, challenge = rp.authentication_options(
        rp.relying_party(), allow=[c.credential_id for c in have], uv_required=uv_required(user)
    )
    _challenge(session, challenge, purpose, user, **bound)
    return options


def verify_assertion(
    session: orm.Session, user: User, purpose: str, credential: dict[str, Any], **bound: str | None
) -> MfaCredential:
    """The security key that made a valid assertion; its sign count moved on (not committed)."""
    challenge, origin = _spend(session, credential, purpose, user, **bound)
    wanted = rp.credential_id_of(credential)
    key = next((c for c in credentials(session, user.id) if c.credential_id == wanted), None)
    if key is None:
        raise errors.IdentityError(
            "the assertion comes from a key this user has not registered", reason="mfa_key_unknown", status=400
        )
    key.sign_count = rp.verify_assertion(
        rp.relying_party(),
        credential,
        challenge,
        origin,
        public_key=key.public_key,
        sign_count=key.sign_count,
        uv_required=uv_required(user),
    )
    key.used_at = models.utcnow()
    return key


def _totp_allowed(session: orm.Session, user: User) -> None:
    if not sessions.policy(session, user.tenant_id).totp_allowed:
        raise errors.IdentityError(
            "the tenant's MFA policy does not allow TOTP codes", reason="mfa_totp_not_allowed", status=403
        )


def totp_enroll(session: orm.Session, user: User) -> tuple[str, str]:
    """A new TOTP seed (pending until ``totp_confirm``): ``(base32 seed, otpauth:// URI)``."""
    _totp_allowed(session, user)
    session.execute(sa.delete(MfaCredential).where(MfaCredential.user_id == user.id, MfaCredential.kind == "totp_new"))
    seed = pyotp.random_base32()
    session.add(MfaCredential(user_id=user.id, kind="totp_new", secret=seed, name="authenticator app"))
    return seed, pyotp.TOTP(seed).provisioning_uri(name=user.user_name, issuer_name=TOTP_ISSUER)


def _check_totp(row: MfaCredential, code: str) -> None:
    """Accept ``code`` for the current 30 s step or the one before, once (``sign_count`` keeps the last
    step used: a code is never accepted twice)."""
    totp = pyotp.TOTP(row.secret)
    now = models.utcnow()
    step = int(totp.timecode(now))
    for candidate in (step, step - 1):
        if candidate > row.sign_count and secrets.compare_digest(totp.generate_otp(candidate), code.strip()):
            row.sign_count = candidate
            row.used_at = now
            return
    raise errors.IdentityError("wrong, expired or already used TOTP code", reason="mfa_totp_invalid", status=400)


def totp_confirm(session: orm.Session, user: User, code: str) -> MfaCredential:
    """Make the pending seed the user's TOTP factor once a code of it checks."""
    _totp_allowed(session, user)
    pending = credentials(session, user.id, "totp_new")
    if not pending:
        raise errors.IdentityError("no TOTP enrollment is pending", reason="mfa_totp_invalid", status=400)
    _check_totp(pending[0], code)
    session.execute(sa.delete(MfaCredential).where(MfaCredential.user_id == user.id, MfaCredential.kind == "totp"))
    pending[0].kind = "totp"
    return pending[0]


def totp_verify(session: orm.Session, user: User, code: str) -> MfaCredential:
    _totp_allowed(session, user)
    have = credentials(session, user.id, "totp")
    if not have:
        raise errors.IdentityError("no TOTP factor is enrolled", reason="mfa_totp_invalid", status=400)
    _check_totp(have[0], code)
    return have[0]


def new_recovery_codes(session: orm.Session, user: User) -> list[str]:
    """Ten new single-use recovery codes (shown once; the old ones stop working); stored as SHA-256."""
    session.execute(sa.delete(MfaCredential).where(MfaCredential.user_id == user.id, MfaCredential.kind == "recovery"))
    codes = ["-".join(secrets.token_hex(3) for _ in range(3)) for _ in range(RECOVERY_CODES)]
    for code in codes:
        session.add(MfaCredential(user_id=user.id, kind="recovery", secret=_sha(code)))
    return codes


def use_recovery_code(session: orm.Session, user: User, code: str) -> MfaCredential:
    """Spend one recovery code; 400 ``identity_mfa_recovery_invalid`` when it is unknown or used."""
    digest = _sha(code.strip().lower())
    row = session.scalar(
        sa.select(MfaCredential).where(
            MfaCredential.user_id == user.id,
            MfaCredential.kind == "recovery",
            MfaCredential.secret == digest,
            MfaCredential.used_at.is_(None),
        )
    )
    if row is None:
        raise errors.IdentityError("unknown or used recovery code", reason="mfa_recovery_invalid", status=400)
    row.used_at = models.utcnow()
    return row


def set_policy(session: orm.Session, tenant_id: str, **values: Any) -> TenantIdentityPolicy:
    """Store the tenant's policy with ``values`` (``mfa_required``, ``totp_allowed``, ``step_up_s``...)."""
    row = session.get(TenantIdentityPolicy, tenant_id)
    if row is None:
        row = sessions.policy(session, tenant_id)
        session.add(row)
    for name, value in values.items():
        if value is not None:
            setattr(row, name, value)
    session.flush()
    return row


def require_step_up(scope: Any, action: str) -> None:
    """``check_step_up`` for the principal of a route's ``scoping.Scope`` (its database session is only
    opened for a browser session's principal)."""
    if scope.principal.user_id is not None:
        check_step_up(scope.session, scope.principal, action)


def check_step_up(session: orm.Session, principal: Principal, action: str) -> None:
    """403 ``identity_step_up_required`` unless a browser session's user made a step-up WebAuthn
    assertion within the tenant's ``step_up_s``. API keys pass: a key is its own credential, and its
    creation by a person already needed a step-up."""
    if principal.user_id is None:
        return
    row = session.get(UserSession, principal.key_id)
    window = sessions.policy(session, principal.tenant_id or "").step_up_s or 300
    fresh = row is not None and row.step_up_at is not None
    if fresh and row is not None and row.step_up_at is not None:
        fresh = row.step_up_at + dt.timedelta(seconds=window) > models.utcnow()
    if not fresh:
        raise errors.IdentityError(
            f"{action} needs a fresh security-key assertion (step-up, within {window} s)",
            reason="step_up_required",
            status=403,
            hint="POST /auth/mfa/step-up/options, then /auth/mfa/step-up",
        )


def mark(session: orm.Session, session_id: str, *, step_up: bool) -> None:
    """Record in the browser session that its user just proved a second factor (and a step-up)."""
    now = models.utcnow()
    values: dict[str, Any] = {"mfa_at": now}
    if step_up:
        values["step_up_at"] = now
    session.execute(sa.update(UserSession).where(UserSession.id == session_id).values(**values))


class HasSession(Protocol):
    """What the policy helpers need of a route's scope (``controlplane.scoping.Scope``)."""

    @property
    def session(self) -> orm.Session: ...


def policy_of(scope: HasSession, tenant_id: str) -> TenantIdentityPolicy:
    """The tenant's identity policy through a route's scope (the defaults when none is stored)."""
    return sessions.policy(scope.session, tenant_id)


def set_policy_of(scope: HasSession, tenant_id: str, **values: Any) -> TenantIdentityPolicy:
    """``set_policy`` through a route's scope."""
    return set_policy(scope.session, tenant_id, **values)
