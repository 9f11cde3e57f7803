"""Who a request acts as: authenticate a bearer key, check scopes, and issue keys that never exceed
their creator's rights."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.auth import keys, roles
from velyrix.controlplane.db import models


@dataclass(frozen=True)
class Principal:
    """The authenticated caller: one API key, its tenant (None for provider staff) and its scopes."""

    key_id: str
    name: str
    tenant_id: str | None
    role: str
    scopes: frozenset[str]
    expires_at: dt.datetime | None = None
    user_id: str | None = None
    """The person behind a browser session (``identity.sessions``); None for API keys."""
    mfa_at: dt.datetime | None = None
    """When that person last proved a second factor in the session (step-up, ``identity.mfa``)."""

    @property
    def is_provider(self) -> bool:
        return self.tenant_id is None

    @property
    def actor(self) -> str:
        """How audit records name the caller: ``key:<id> (<name>)``, or ``user:<id> (<name>)`` for a
        browser session."""
        if self.user_id is not None:
            return f"user:{self.user_id} ({self.name})"
        return f"key:{self.key_id} ({self.name})"

    def require(self, scope: str) -> None:
        """Raise ``PermissionDeniedError`` (403) unless the key has ``scope``."""
        if scope not in self.scopes:
            raise errors.PermissionDeniedError(scope=scope)


def authenticate(
    session: orm.Session | sa.Connection,
    token: str | None,
    now: dt.datetime | None = None,
    first: Callable[[Any, dict[str, Any]], Any] | None = None,
) -> Principal:
    """The principal of ``token``; ``AuthenticationError`` (401) when it is missing, malformed, unknown,
    expired or revoked. Looked up on every request, so revocation takes effect on the next one.
    ``first(statement, params)`` reads the key's row (default: on ``session``; the API's cache of
    verified rows, ``identity/verified.py``, is checked against the credential generation)."""
    if token is not None and token.startswith(keys.NODE_PREFIX):
        return authenticate_node(session, token, now)
    if token is None or not keys.looks_valid(token):
        raise errors.AuthenticationError()
    # A column select, not an ORM entity: this runs on every request (see bench/bench_api.py).
    params = {"digest": keys.digest(token)}
    row = first(_BY_DIGEST, params) if first is not None else session.execute(_BY_DIGEST, params).first()
    if not usable(row, now or models.utcnow()):
        raise errors.AuthenticationError()
    return principal_of(row)


def usable(row: Any, now: dt.datetime) -> bool:
    """True when a key's row (``BY_DIGEST``) exists and is neither revoked nor expired at ``now``."""
    return row is not None and row.revoked_at is None and (row.expires_at is None or row.expires_at > now)


def principal_of(row: Any) -> Principal:
    """The principal of a key's row (``BY_DIGEST``), once ``usable``."""
    return Principal(
        key_id=row.id,
        name=row.name,
        tenant_id=row.tenant_id,
        role=row.role,
        scopes=frozenset(row.scopes),
        expires_at=row.expires_at,
    )


NODE_ROLE = "node"
NODE_SCOPES = frozenset({"nodes:report"})


def authenticate_node(session: orm.Session | sa.Connection, token: str, now: dt.datetime | None = None) -> Principal:
    """The principal of a node agent's token (``vlxn_``): provider-side, named ``node:<hostname>``, with
    the single scope ``nodes:report``. ``AuthenticationError`` when malformed, unknown or revoked."""
    if not keys.looks_valid(token, keys.NODE_PREFIX):
        raise errors.AuthenticationError()
    cred, node = models.NodeCredential, models.Node
    row = session.execute(
        sa.select(cred.id, cred.revoked_at, node.name)
        .join(node, node.id == cred.node_id)
        .where(cred.secret_sha256 == keys.digest(token))
    ).first()
    if row is None or row.revoked_at is not None:
        raise errors.AuthenticationError()
    return Principal(key_id=row.id, name=f"node:{row.name}", tenant_id=None, role=NODE_ROLE, scopes=NODE_SCOPES)


_K = models.ApiKey
_BY_DIGEST = sa.select(_K.id, _K.name, _K.tenant_id, _K.role, _K.scopes, _K.expires_at, _K.revoked_at).where(
    _K.secret_sha256 == sa.bindparam("digest")
)
BY_DIGEST = _BY_DIGEST
"""A key's row by the SHA-256 of its secret (``:digest``)."""


def _within_role(creator: Principal, role: str, valid_roles: dict[str, frozenset[str]]) -> None:
    """A key never mints a role above its own (roles are listed from most to least powerful)."""
    order = list(valid_roles)
    if creator.role in order and order.index(role) < order.index(creator.role):
        raise errors.PermissionDeniedError(
            f"a key of role '{creator.role}' cannot create a key of role '{role}'",
            scope="keys:admin",
            hint=f"ask an {order[0]} to create it",
        )


def revoke_with_children(session: orm.Session, key: models.ApiKey, now: dt.datetime | None = None) -> list[str]:
    """Revoke ``key`` and every key created by it, transitively (a revoked key's rights end, and so do
    the rights it handed on: docs/keys.md). Returns the ids revoked now."""
    now = now or models.utcnow()
    done: list[str] = []
    todo = [key]
    seen: set[str] = set()
    while todo:
        row = todo.pop()
        if row.id in seen:
            continue
        seen.add(row.id)
        if row.revoked_at is None:
            row.revoked_at = now
            done.append(row.id)
        todo.extend(session.scalars(sa.select(models.ApiKey).where(models.ApiKey.created_by_key_id == row.id)))
    return done


def issue_key(
    session: orm.Session,
    *,
    tenant_id: str | None,
    name: str,
    role: str,
    scopes: Iterable[str] | None = None,
    expires_at: dt.datetime | None = None,
    creator: Principal | None = None,
) -> tuple[models.ApiKey, str]:
    """Create a key and return ``(row, secret)``; the secret exists nowhere else afterwards.

    ``tenant_id`` None makes a provider key (role operator or auditor). ``scopes`` narrows the role's
    scopes (default: all of them). With a ``creator`` (an API call), the new key must stay within the
    creator's tenant, scopes and expiry; ``creator`` None is the out-of-band bootstrap
    (``velyrix admin``). Raises ``InvalidInputError``/``UnknownNameError`` (422) or
    ``PermissionDeniedError`` (403).
    """
    valid_roles = roles.PROVIDER_ROLES if tenant_id is None else roles.TENANT_ROLES
    if role in roles.ALL_ROLES and role not in valid_roles:  # a tenant role for the provider, or the reverse
        raise errors.PermissionDeniedError(
            f"role '{role}' is not one a {'provider' if tenant_id is None else 'tenant'} key can hold",
            scope="keys:admin",
            hint="valid here: " + ", ".join(valid_roles),
        )
    if role not in valid_roles:
        raise errors.UnknownNameError("provider role" if tenant_id is None else "tenant role", role, valid_roles)
    role_scopes = valid_roles[role]
    wanted = frozenset(role_scopes if scopes is None else scopes)
    unknown = sorted(wanted - set(roles.SCOPES))
    if unknown:
        raise errors.UnknownNameError("scope", unknown[0], roles.SCOPES)
    if not wanted <= role_scopes:
        raise errors.InvalidInputError(
            f"scopes {sorted(wanted - role_scopes)} are not part of role '{role}'",
            hint=f"role '{role}' allows: {', '.join(sorted(role_scopes))}",
        )
    if expires_at is not None and expires_at <= models.utcnow():
        raise errors.InvalidInputError("expires_at lies in the past", hint="give a future time, or omit it")
    if creator is not None:
        _within_role(creator, role, valid_roles)
        if creator.tenant_id != tenant_id:
            raise errors.PermissionDeniedError("a key can only create keys of its own tenant", scope="keys:admin")
        excess = sorted(wanted - creator.scopes)
        if excess:
            raise errors.PermissionDeniedError(
                f"a key cannot create a key with more rights than its own (missing: {', '.join(excess)})",
                scope=excess[0],
                hint="ask an owner to create this key, or pick a smaller role or scopes",
            )
        if creator.expires_at is not None and (expires_at is None or expires_at > creator.expires_at):
            expires_at = creator.expires_at  # a key never outlives the rights of the key that made it
    token = keys.generate()
    row = models.ApiKey(
        tenant_id=tenant_id,
        name=name,
        role=role,
        scopes=sorted(wanted),
        prefix=keys.display_prefix(token),
        secret_sha256=keys.digest(token),
        created_by_key_id=creator.key_id if creator else None,
        expires_at=expires_at,
    )
    session.add(row)
    session.flush()
    return row, token
