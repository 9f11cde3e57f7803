"""Tenants' SLA contracts as stored by the provider (``velyrix admin contract set``, ``PUT /v1/contracts``):
read by billing, the NOC's timers and the SLA reports."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db.models import noc as models_noc
from velyrix.ops.sla import contracts


def contract_for(session: orm.Session, tenant_id: str) -> contracts.Contract:
    """The tenant's own contract, else the catalog default."""
    row = session.scalar(sa.select(models_noc.SlaContract).where(models_noc.SlaContract.tenant_id == tenant_id))
    return contracts.from_dict(row.name, row.terms) if row else contracts.default()


def all_contracts(session: orm.Session) -> dict[str, contracts.Contract]:
    """Every tenant's own contract (tenants missing here have the catalog default)."""
    return {
        r.tenant_id: contracts.from_dict(r.name, r.terms) for r in session.scalars(sa.select(models_noc.SlaContract))
    }
