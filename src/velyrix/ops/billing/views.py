"""What the billing and SLA routes show, read through the tenant-scoped ``Scope`` (a tenant never sees
another's invoices, credit notes, usage, contracts or reports)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from velyrix import errors
from velyrix.controlplane import audit, scoping
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.fleet import clock
from velyrix.ops.billing import ledger
from velyrix.ops.sla import contract_hcl, contract_store, reports

MONTH = re.compile(r"^(20[0-9]{2})-(0[1-9]|1[0-2])$")


def check_month(month: str) -> str:
    """``YYYY-MM`` or ``InvalidInputError`` (422) saying so."""
    if not MONTH.fullmatch(month):
        raise errors.InvalidInputError(f"invalid month '{month}'", hint="YYYY-MM, e.g. 2026-11")
    return month


def last_month(now: dt.datetime | None = None) -> str:
    """The calendar month before ``now`` (default: the wall clock), ``YYYY-MM``."""
    first = (now or clock.now()).replace(day=1)
    prev = first - dt.timedelta(days=1)
    return f"{prev.year:04d}-{prev.month:02d}"


def invoice_out(r: Any) -> dict[str, Any]:
    return {
        "id": r.id,
        "tenant_id": r.tenant_id,
        "number": r.number,
        "month": r.month,
        "state": r.state,
        "currency": r.currency,
        "lines": r.lines,
        "credits": r.credits,
        "subtotal_usd": r.subtotal,
        "credits_applied_usd": r.credits_applied,
        "total_usd": r.total,
        "issued_at": r.issued_at,
    }


def credit_note_out(r: Any) -> dict[str, Any]:
    return {
        "id": r.id,
        "tenant_id": r.tenant_id,
        "number": r.number,
        "month": r.month,
        "cluster_id": r.cluster_id,
        "state": r.state,
        "amount_usd": r.amount,
        "remaining_usd": r.remaining,
        "applications": r.applications,
        "evidence": r.evidence,
        "issued_at": r.issued_at,
    }


def _tenant(scope: scoping.Scope, tenant_id: str) -> models.Tenant:
    return scope.get(models.Tenant, tenant_id, "tenant")


def contract_view(scope: scoping.Scope, tenant_id: str) -> dict[str, Any]:
    """The contract of a tenant ``scope`` may see (its own one, else the catalog default)."""
    tenant = _tenant(scope, tenant_id)
    row = scope.latest(models_noc.SlaContract, tenant_id=tenant.id)
    terms = contract_store.contract_for(scope.session, tenant.id)
    return {"tenant_id": tenant.id, "custom": row is not None, "contract": terms.to_dict()}


def set_contract(scope: scoping.Scope, tenant_id: str, text: str, filename: str) -> dict[str, Any]:
    """Parse the HCL contract (every problem at once) and make it the tenant's (provider only)."""
    tenant = _tenant(scope, tenant_id)
    terms = contract_hcl.loads(text, filename)
    row = scope.latest(models_noc.SlaContract, tenant_id=tenant.id)
    if row is None:
        row = models_noc.SlaContract(tenant_id=tenant.id, name=terms.name, terms={}, set_by=scope.principal.actor)
        scope.session.add(row)
    row.name, row.terms, row.source, row.set_by = terms.name, terms.to_dict(), text, scope.principal.actor
    scope.session.flush()
    return {"tenant_id": tenant.id, "custom": True, "contract": terms.to_dict()}


def add_window(scope: scoping.Scope, body: dict[str, Any]) -> dict[str, Any]:
    """Record a maintenance window of a cluster, announced now (the fleet's clock: the twin's on a twin)."""
    cluster = scope.get(models.Cluster, body["cluster_id"], "cluster")
    if body["ends_at"] <= body["starts_at"]:
        raise errors.InvalidInputError("a maintenance window must end after it starts")
    row = models_noc.MaintenanceWindow(
        tenant_id=cluster.tenant_id,
        cluster_id=cluster.id,
        starts_at=body["starts_at"],
        ends_at=body["ends_at"],
        announced_at=clock.now(),
        label=body.get("label", ""),
    )
    scope.session.add(row)
    scope.session.flush()
    return {
        "id": row.id,
        "tenant_id": row.tenant_id,
        "cluster_id": row.cluster_id,
        "starts_at": row.starts_at,
        "ends_at": row.ends_at,
        "announced_at": row.announced_at,
        "label": row.label,
    }


def close(scope: scoping.Scope, month: str, info: audit.RequestInfo) -> dict[str, Any]:
    """Close ``month`` (provider only): ``ledger.close_month``."""
    return ledger.close_month(scope.session, check_month(month), info=info, principal=scope.principal)


def report(scope: scoping.Scope, tenant_id: str, month: str) -> dict[str, Any]:
    """The SLA report of a tenant ``scope`` may see."""
    tenant = _tenant(scope, tenant_id)
    return reports.build(scope.session, tenant.id, check_month(month))


def usage(scope: scoping.Scope, month: str, cursor: str | None, limit: int) -> tuple[list[dict[str, Any]], str | None]:
    """The stored usage events of ``month`` that ``scope`` may see, CloudEvents-shaped."""
    rows, nxt = scope.page(models_noc.UsageEvent, filters={"month": check_month(month)}, cursor=cursor, limit=limit)
    items = [
        {
            "specversion": "1.0",
            "id": r.event_id,
            "source": r.source,
            "type": r.type,
            "subject": r.subject,
            "time": r.time,
            "datacontenttype": "application/json",
            "data": r.data,
        }
        for r in rows
    ]
    return items, nxt
