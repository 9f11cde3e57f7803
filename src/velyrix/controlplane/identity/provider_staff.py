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
    name = settings.load().identity.provider_tenant
    if not name or row.mfa_at is None:
        return row.tenant_id, frozenset()
    found = conn.execute(sa.select(models.Tenant.name).where(models.Tenant.id == row.tenant_id)).scalar()
    if found != name:
        return row.tenant_id, frozenset()
    return None, roles.PROVIDER_ROLES[row.role]
