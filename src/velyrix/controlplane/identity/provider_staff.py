"""The provider's own staff in the browser: users of the provider's tenant (the tenant named by
``VELYRIX_PROVIDER_TENANT``, ``settings.IdentitySettings.provider_tenant``) whose role is a provider role
(``roles.PROVIDER_ROLES``: operator, auditor) act, through their browser session, as provider staff: no
tenant, the provider role's scopes (the console's operator pages, ``console/operator_*.py``). Only after a
second factor in the session (``mfa_at``; security keys of operators verify the user, ``mfa.UV_ROLES``):
without one, such a session reads nothing. A user of any other tenant with such a role gets no scope."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import settings
from velyrix.controlplane.auth import roles
from velyrix.controlplane.db import models


def rights(conn: sa.Connection | orm.Session, row: Any) -> tuple[str | None, frozenset[str]]:
    """(tenant id, scopes) of a session row (``sessions._BY_SECRET``: ``tenant_id``, ``role``, ``mfa_at``):
    a tenant role's scopes in its tenant; a provider role's scopes without a tenant for a user of the
    provider's tenant who proved a second factor; no scope otherwise."""
    if row.role not in roles.PROVIDER_ROLES:
        return row.tenant_id, roles.TENANT_ROLES.get(row.role, frozenset())
    if row.mfa_at is None or not is_provider_tenant(conn, row.tenant_id):
        return row.tenant_id, frozenset()
    return None, roles.PROVIDER_ROLES[row.role]


def is_provider_tenant(conn: sa.Connection | orm.Session, tenant_id: str | None) -> bool:
    """Whether ``tenant_id`` is the provider's own tenant (its name is ``VELYRIX_PROVIDER_TENANT``; an empty
    setting: no tenant is). Only that tenant's single sign-on maps users to provider roles (``oidc.role_for``)."""
    if tenant_id is None or not settings.load().identity.provider_tenant:
        return False
    found = conn.execute(sa.select(models.Tenant.name).where(models.Tenant.id == tenant_id)).scalar()
    return isinstance(found, str) and is_provider_name(found)


def is_provider_name(tenant_name: str) -> bool:
    """Whether a tenant called ``tenant_name`` is the provider's own (``VELYRIX_PROVIDER_TENANT``; empty: none)."""
    name = settings.load().identity.provider_tenant
    return bool(name) and tenant_name == name
