"""The members of a tenant (``db.models.identity.User``: people signed in through SSO or provisioned over
SCIM) as ``/v1/users`` and the console show them: role, second factors, how they came, active or not;
and ``set_role``, an owner's change of a member's role (the last active owner keeps the role). The
identity provider's claims and SCIM groups map roles again at the member's next sign-in or SCIM update
(``login.upsert_user``, ``scim_store``)."""

from __future__ import annotations

from typing import Any

from velyrix import errors
from velyrix.controlplane import scoping
from velyrix.controlplane.auth import roles
from velyrix.controlplane.db.models.identity import User
from velyrix.controlplane.identity import mfa

MEMBER_ROLES = tuple(r for r in roles.TENANT_ROLES if r != "scim")
"""Roles a person may hold (``scim`` is a role of provisioning keys only)."""


def out(scope: scoping.Scope, user: User) -> dict[str, Any]:
    """A member as the API shows it: never a credential, only which kinds of second factor it has."""
    session = scope.session
    kinds = [k for k in ("webauthn", "totp") if mfa.credentials(session, user.id, k)]
    return {
        "id": user.id,
        "tenant_id": user.tenant_id,
        "user_name": user.user_name,
        "display_name": user.display_name,
        "role": user.role,
        "active": user.active,
        "groups": list(user.groups or []),
        "provisioned_by": "scim" if (user.scim or user.external_id) else "sso",
        "second_factors": kinds,
        "security_keys": len(mfa.credentials(session, user.id)),
        "created_at": user.created_at,
        "updated_at": user.updated_at,
    }


def page(scope: scoping.Scope, cursor: str | None, limit: int) -> tuple[list[dict[str, Any]], str | None]:
    """One page of the members ``scope`` may read (tenants: their own), oldest first."""
    rows, nxt = scope.page(User, filters={}, cursor=cursor, limit=limit)
    return [out(scope, u) for u in rows], nxt


def set_role(scope: scoping.Scope, user_id: str, role: str) -> tuple[dict[str, Any], str]:
    """Give the member ``user_id`` (404 unless ``scope`` may read it) the role ``role``; returns the
    member and its former role. 422 ``unknown_name`` for a role a person cannot hold; 409 ``conflict``
    when it would leave the tenant without an active owner."""
    if role not in MEMBER_ROLES:
        raise errors.UnknownNameError("member role", role, MEMBER_ROLES)
    user = scope.get(User, user_id, "user")
    before = user.role
    if before == "owner" and role != "owner" and user.active:
        owners = [u for u in scope.session.scalars(scope.select(User).where(User.role == "owner")) if u.active]
        if len(owners) <= 1:
            raise errors.ConflictError(
                f"{user.user_name} is the tenant's last active owner", hint="make another member owner first"
            )
    user.role = role
    scope.flush()
    return out(scope, user), before
