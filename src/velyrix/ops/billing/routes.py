"""``/v1/invoices``, ``/v1/credit-notes``, ``/v1/usage-events``, ``/v1/contracts``, ``/v1/sla-reports``,
``/v1/maintenance-windows`` and ``/v1/billing-months`` (closing a month). Tenants read their own with
``billing:read`` (roles owner and billing; not viewer); the provider sets contracts, announces maintenance
and closes months with ``billing:admin``."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict, Field

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, request_info, require
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.controlplane.identity import mfa
from velyrix.ops.billing import rendering, views

router = APIRouter(tags=["billing"], responses=schemas.PROBLEM_RESPONSES)
FORMAT = Query("json", description="json, html or pdf")
MONTH = Query(None, pattern=r"^20[0-9]{2}-(0[1-9]|1[0-2])$", description="YYYY-MM (default: the last month)")


class InvoiceOut(BaseModel):
    id: str
    tenant_id: str
    number: str
    month: str
    state: str
    currency: str
    lines: list[dict[str, Any]] = Field(description="description, quantity, unit, unit_price_usd, amount_usd")
    credits: list[dict[str, Any]] = Field(description="credit notes applied: number, amount_usd")
    subtotal_usd: str
    credits_applied_usd: str
    total_usd: str
    issued_at: dt.datetime


class CreditNoteOut(BaseModel):
    id: str
    tenant_id: str
    number: str
    month: str
    cluster_id: str
    state: str = Field(description="issued, partially_applied, applied")
    amount_usd: str
    remaining_usd: str
    applications: list[dict[str, Any]]
    evidence: dict[str, Any] = Field(description="availability computation, incidents, windows, contract")
    issued_at: dt.datetime


class ContractOut(BaseModel):
    tenant_id: str
    custom: bool
    contract: dict[str, Any]


class ContractBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hcl: str = Field(max_length=65536, description='contract "NAME" { ... } (docs/sla.md)')
    filename: str = Field("contract.hcl", max_length=200)


class WindowBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cluster_id: str = Field(max_length=32)
    starts_at: dt.datetime
    ends_at: dt.datetime
    label: str = Field("", max_length=200)
    # no announced_at: the server stamps the announcement with the fleet's clock (a backdated notice would
    # exclude downtime from the SLA), so a body that carries one is refused (422, extra="forbid")


class WindowOut(BaseModel):
    id: str
    tenant_id: str
    cluster_id: str
    starts_at: dt.datetime
    ends_at: dt.datetime
    announced_at: dt.datetime | None
    label: str


class CloseBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    month: str = Field(pattern=r"^20[0-9]{2}-(0[1-9]|1[0-2])$")


class CloseOut(BaseModel):
    month: str
    usage_events_new: int
    invoices: list[str]
    credit_notes: list[str]


def _document(data: dict[str, Any], fmt: str, html: Any, pdf: Any) -> Response | dict[str, Any]:
    if fmt == "html":
        return Response(html(data), media_type="text/html")
    if fmt == "pdf":
        return Response(pdf(data), media_type="application/pdf")
    return data


@router.get("/v1/invoices", name="invoices.list", response_model=schemas.Page[InvoiceOut])
def list_invoices(
    ctx: Ctx = Depends(require("billing:read")),
    month: str | None = Query(None, pattern=r"^20[0-9]{2}-(0[1-9]|1[0-2])$"),
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    """Invoices, oldest first (tenants: their own)."""
    rows, nxt = ctx.scope.page(models_noc.Invoice, filters={"month": month}, cursor=cursor, limit=limit)
    return {"items": [views.invoice_out(r) for r in rows], "next_cursor": nxt}


@router.get("/v1/invoices/{invoice_id}", name="invoices.get", response_model=InvoiceOut)
def get_invoice(
    invoice_id: str, ctx: Ctx = Depends(require("billing:read")), format: Literal["json", "html", "pdf"] = FORMAT
) -> Any:
    """One invoice as JSON, HTML or PDF."""
    data = views.invoice_out(ctx.scope.get(models_noc.Invoice, invoice_id, "invoice"))
    return _document(data, format, rendering.invoice_html, rendering.invoice_pdf)


@router.get("/v1/credit-notes", name="credit_notes.list", response_model=schemas.Page[CreditNoteOut])
def list_credit_notes(
    ctx: Ctx = Depends(require("billing:read")),
    state: Literal["issued", "partially_applied", "applied"] | None = None,
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    """SLA credit notes with their evidence (tenants: their own)."""
    rows, nxt = ctx.scope.page(models_noc.CreditNote, filters={"state": state}, cursor=cursor, limit=limit)
    return {"items": [views.credit_note_out(r) for r in rows], "next_cursor": nxt}


@router.get("/v1/credit-notes/{credit_note_id}", name="credit_notes.get", response_model=CreditNoteOut)
def get_credit_note(credit_note_id: str, ctx: Ctx = Depends(require("billing:read"))) -> dict[str, Any]:
    return views.credit_note_out(ctx.scope.get(models_noc.CreditNote, credit_note_id, "credit note"))


@router.get("/v1/usage-events", name="usage_events.list", response_model=schemas.Page[dict[str, Any]])
def list_usage(
    ctx: Ctx = Depends(require("billing:read")),
    month: str | None = MONTH,
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    """Stored usage events of a month (CloudEvents 1.0 shape); meters are their sums."""
    items, nxt = views.usage(ctx.scope, month or views.last_month(), cursor, limit)
    return {"items": items, "next_cursor": nxt}


@router.get("/v1/contracts/{tenant_id}", name="contracts.get", response_model=ContractOut)
def get_contract(tenant_id: str, ctx: Ctx = Depends(require("billing:read"))) -> dict[str, Any]:
    """The tenant's SLA contract (its own, or the catalog default)."""
    return views.contract_view(ctx.scope, tenant_id)


@router.put("/v1/contracts/{tenant_id}", name="contracts.set", response_model=ContractOut)
def set_contract(tenant_id: str, body: ContractBody, ctx: Ctx = Depends(require("billing:admin"))) -> dict[str, Any]:
    """Set the tenant's contract from HCL; 422 ``spec_invalid`` lists every problem with file:line:column."""
    mfa.require_step_up(ctx.scope, "setting a contract")
    data = views.set_contract(ctx.scope, tenant_id, body.hcl, body.filename)
    ctx.audit(f"contracts/{tenant_id}", detail={"name": data["contract"]["name"]}, tenant_id=tenant_id)
    ctx.commit()
    return data


@router.post("/v1/maintenance-windows", name="maintenance_windows.create", status_code=201, response_model=WindowOut)
def add_window(body: WindowBody, ctx: Ctx = Depends(require("billing:admin"))) -> dict[str, Any]:
    """Announce a maintenance window of a cluster (excluded from availability only when announced at least
    the contract's notice days ahead)."""
    data = views.add_window(ctx.scope, body.model_dump())
    ctx.audit(f"maintenance-windows/{data['id']}", status_code=201, tenant_id=data["tenant_id"])
    ctx.commit()
    return data


@router.post("/v1/billing-months", name="billing_months.close", status_code=201, response_model=CloseOut)
def close_month(body: CloseBody, ctx: Ctx = Depends(require("billing:admin"))) -> dict[str, Any]:
    """Close a month: meter it, issue every tenant's invoice with open credits applied, and issue the SLA
    credit notes of its missed targets (applied to the next month's invoices). 409 when already closed."""
    data = views.close(ctx.scope, body.month, request_info(ctx.request))
    ctx.audit(f"billing-months/{body.month}", status_code=201, detail={"invoices": len(data["invoices"])})
    ctx.commit()
    return data


@router.get("/v1/sla-reports/{tenant_id}", name="sla_reports.get")
def sla_report(
    tenant_id: str,
    ctx: Ctx = Depends(require("billing:read")),
    month: str | None = MONTH,
    format: Literal["json", "html", "pdf"] = FORMAT,
) -> Any:
    """The tenant's monthly SLA report: availability per cluster with its minute-by-minute evidence,
    incidents, capacity (JSON, HTML with charts, or PDF)."""
    data = views.report(ctx.scope, tenant_id, month or views.last_month())
    return _document(data, format, rendering.report_html, rendering.report_pdf)
