"""The status pages' access to the database: a tenant's page through the principal's ``Scope`` (a tenant key
reads its own tenant only: 404 for another), a region's page in its own read-only session."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import FastAPI

from velyrix.controlplane import scoping
from velyrix.controlplane.db import models
from velyrix.ops.noc import statuspage


def tenant(scope: scoping.Scope, tenant_id: str, now: dt.datetime, base: str) -> dict[str, Any]:
    """``statuspage.tenant_summary`` for a tenant ``scope`` may see."""
    row = scope.get(models.Tenant, tenant_id, "tenant")
    return statuspage.tenant_summary(scope.session, row, now, base)


def region(app: FastAPI, name: str, now: dt.datetime, base: str) -> dict[str, Any]:
    """``statuspage.region_summary`` of ``name``."""
    with app.state.sessionmaker() as session:
        return statuspage.region_summary(session, name, now, base)
