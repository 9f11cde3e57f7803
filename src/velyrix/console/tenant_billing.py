"""The tenant's billing pages: invoices (each with its lines and the SLA credits applied to it), credit
notes (amount, what is left, where it was applied, the availability evidence behind it) and the monthly SLA
reports. Invoices and credit notes are read through the principal's scope, the same scoped queries as the
API's ``/v1/invoices`` and ``/v1/credit-notes`` routes (``ops/billing/routes.py``); the SLA report is the
API's own builder, which the composition root (``ops/service.py``) hands over as ``app.state``'s
``SLA_REPORT`` (the console sits beside the ops layer and does not import it). Scope ``billing:read``
(roles owner and billing); a foreign tenant's invoice or credit note answers 404 like a missing one."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from velyrix import errors
from velyrix.console import access, render
from velyrix.controlplane import scoping
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.fleet import clock

router = APIRouter(include_in_schema=False)
SLA_REPORT = "console_sla_report"
"""``app.state`` attribute: ``(scope, tenant_id, month) -> report`` (``ops.billing.views.report``)."""
MONTH = r"^20[0-9]{2}-(0[1-9]|1[0-2])$"
MOST = 240
"""Invoices or credit notes one page lists (twenty years of months)."""

SlaReport = Callable[[scoping.Scope, str, str], dict[str, Any]]


def _all(ctx: Ctx, model: Any) -> list[Any]:
    found: list[Any] = []
    cursor = None
    while len(found) < MOST:
        rows, cursor = ctx.scope.page(model, filters={}, cursor=cursor, limit=scoping.MAX_PAGE)
        found.extend(rows)
        if cursor is None:
            break
    return found[:MOST]


@router.get("/console/invoices", name="console.invoices")
def invoices(request: Request, ctx: Ctx = Depends(access.reads("billing:read"))) -> Response:
    """Invoices (newest month first) and credit notes of the tenant."""
    rows = sorted(_all(ctx, models_noc.Invoice), key=lambda r: r.month, reverse=True)
    notes = sorted(_all(ctx, models_noc.CreditNote), key=lambda r: r.month, reverse=True)
    return render.page(request, "billing_invoices.html", invoices=rows, notes=notes, title="Invoices and credit notes")


@router.get("/console/invoices/{invoice_id}", name="console.invoice")
def invoice(invoice_id: str, request: Request, ctx: Ctx = Depends(access.reads("billing:read"))) -> Response:
    """One invoice: its lines (quantity, unit, unit price, amount in USD), the credits applied, the total."""
    row = ctx.scope.get(models_noc.Invoice, invoice_id, "invoice")
    return render.page(request, "billing_invoice.html", invoice=row, title=f"Invoice {row.number}")


@router.get("/console/credit-notes/{credit_note_id}", name="console.credit_note")
def credit_note(credit_note_id: str, request: Request, ctx: Ctx = Depends(access.reads("billing:read"))) -> Response:
    """One SLA credit note: the cluster, availability against the target, the credit, its applications."""
    row = ctx.scope.get(models_noc.CreditNote, credit_note_id, "credit note")
    cluster = ctx.scope.latest(models.Cluster, id=row.cluster_id)
    return render.page(
        request,
        "billing_credit_note.html",
        note=row,
        cluster_name=cluster.name if cluster is not None else row.cluster_id,
        evidence=row.evidence,
        title=f"Credit note {row.number}",
    )


def _month_before(now_month: str) -> str:
    year, month = int(now_month[:4]), int(now_month[5:])
    return f"{year - 1:04d}-12" if month == 1 else f"{year:04d}-{month - 1:02d}"


@router.get("/console/sla-reports", name="console.sla_reports")
def sla_reports(
    request: Request,
    ctx: Ctx = Depends(access.reads("billing:read")),
    month: str = Query("", max_length=7),
) -> Response:
    """The tenant's SLA report of ``month`` (default: the last month of the fleet's clock): availability
    per cluster against the contract's target, the credit it earns, the incidents and their responses."""
    now = clock.now()
    current = f"{now.year:04d}-{now.month:02d}"
    month = month or _month_before(current)
    if not re.fullmatch(MONTH, month):
        raise errors.InvalidInputError(f"invalid month '{month}'", hint="YYYY-MM, e.g. 2026-11")
    if ctx.principal.tenant_id is None:
        raise errors.InvalidInputError("an SLA report is a tenant's", hint="sign in as a tenant's user")
    build: SlaReport = getattr(request.app.state, SLA_REPORT)
    report = build(ctx.scope, ctx.principal.tenant_id, month)
    months = [current]
    while len(months) < 13:
        months.append(_month_before(months[-1]))
    names = {c.id: c.name for c in ctx.scope.columns(models.Cluster, ("id", "name"))}
    return render.page(
        request, "billing_sla.html", report=report, month=month, months=months, names=names, title=f"SLA report {month}"
    )
