"""The database side of billing: usage events generated from the state history and ingested idempotently,
and the month close, which issues each tenant's invoice (applying the open SLA credit notes of earlier
months) and the credit notes for this month's missed targets. One audit event per invoice issued and per
credit note issued or applied. The caller commits."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import catalog, errors
from velyrix.controlplane import audit
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.ops.billing import events, invoices, meters, money
from velyrix.ops.sla import contract_store, contracts, history


class MonthClosedError(errors.ConflictError):
    code = "month_closed"
    template = "billing month {month} is already closed"


def _node_intervals(session: orm.Session, lo: dt.datetime, hi: dt.datetime) -> list[events.NodeInterval]:
    q = sa.select(models_noc.NodeAllocation).where(
        models_noc.NodeAllocation.allocated_at < hi,
        sa.or_(models_noc.NodeAllocation.released_at.is_(None), models_noc.NodeAllocation.released_at > lo),
    )
    return [
        events.NodeInterval(
            r.node_name,
            r.node_type,
            catalog.node_type(r.node_type).gpus_per_node,
            r.tenant_id,
            r.cluster_id,
            r.allocated_at,
            r.released_at,
        )
        for r in session.scalars(q)
    ]


def _volume_intervals(session: orm.Session, lo: dt.datetime, hi: dt.datetime) -> list[events.VolumeInterval]:
    q = sa.select(models_noc.VolumeSegment).where(
        models_noc.VolumeSegment.starts_at < hi,
        sa.or_(models_noc.VolumeSegment.ends_at.is_(None), models_noc.VolumeSegment.ends_at > lo),
    )
    return [
        events.VolumeInterval(r.volume_id, r.tier, r.size_tb, r.tenant_id, r.cluster_id, r.starts_at, r.ends_at)
        for r in session.scalars(q)
    ]


def usage_events(session: orm.Session, month: str) -> list[dict[str, Any]]:
    """The month's usage events, generated from the state history (same ids every time)."""
    lo, hi = events.month_bounds(month)
    return [
        *events.gpu_events(_node_intervals(session, lo, hi), month),
        *events.storage_events(_volume_intervals(session, lo, hi), month),
    ]


def ingest(session: orm.Session, batch: Iterable[dict[str, Any]]) -> int:
    """Store the events not stored yet (one per source and id); returns how many were new."""
    pending = {(e["source"], e["id"]): e for e in batch}
    new = 0
    keys = list(pending)
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        ids = [k[1] for k in chunk]
        seen = set(
            session.execute(
                sa.select(models_noc.UsageEvent.source, models_noc.UsageEvent.event_id).where(
                    models_noc.UsageEvent.event_id.in_(ids)
                )
            )
        )
        rows = []
        for key in chunk:
            if key in seen:
                continue
            e = pending[key]
            at = dt.datetime.fromisoformat(e["time"])
            rows.append(
                {
                    "id": models.new_id("use"),
                    "source": e["source"],
                    "event_id": e["id"],
                    "type": e["type"],
                    "subject": e["subject"],
                    "tenant_id": e["tenant"],
                    "month": f"{at.year:04d}-{at.month:02d}",
                    "time": at,
                    "data": e["data"],
                }
            )
        if rows:
            session.execute(sa.insert(models_noc.UsageEvent), rows)
            new += len(rows)
    return new


def stored_events(session: orm.Session, month: str, tenant_id: str | None = None) -> list[dict[str, Any]]:
    """The stored usage events of ``month`` in CloudEvents shape (what meters are recomputed from)."""
    q = sa.select(models_noc.UsageEvent).where(models_noc.UsageEvent.month == month)
    if tenant_id is not None:
        q = q.where(models_noc.UsageEvent.tenant_id == tenant_id)
    return [
        {"source": r.source, "id": r.event_id, "type": r.type, "subject": r.subject, "data": r.data}
        for r in session.scalars(q)
    ]


def _tier_price(tier: str) -> Decimal:
    return money.price(catalog.storage_tier(tier).price_usd_per_tb_month)


def _gpu_price(node_type: str) -> Decimal:
    return money.price(catalog.gpu_hour_price_usd(node_type))


class _Auditor:
    """Derived audit events of one close: request ids ``<request>.<n>`` (the request's own id stays for
    the close itself)."""

    def __init__(self, session: orm.Session, info: audit.RequestInfo, principal: Principal | None) -> None:
        self.session, self.info, self.principal, self.n = session, info, principal, 0

    def __call__(self, action: str, target: str, tenant_id: str, detail: dict[str, Any]) -> None:
        self.n += 1
        info = audit.RequestInfo(f"{self.info.request_id}.{self.n}", self.info.source_address, "CLOSE", self.info.path)
        audit.record(
            self.session, info, self.principal, action=action, target=target, detail=detail, tenant_id=tenant_id
        )


def _open_credits(session: orm.Session) -> dict[str, list[models_noc.CreditNote]]:
    """Open credit notes per tenant, oldest first."""
    out: dict[str, list[models_noc.CreditNote]] = {}
    q = sa.select(models_noc.CreditNote).where(models_noc.CreditNote.state != "applied")
    for c in sorted(session.scalars(q), key=lambda c: (c.issued_at, c.number)):
        out.setdefault(c.tenant_id, []).append(c)
    return out


def _issue_invoice(
    session: orm.Session, doc: invoices.Draft, notes: dict[str, models_noc.CreditNote], record: _Auditor
) -> models_noc.Invoice:
    inv = models_noc.Invoice(
        tenant_id=doc.tenant_id,
        number=f"INV-{doc.month.replace('-', '')}-{models.new_id('n')[-8:].upper()}",
        month=doc.month,
        lines=[ln.to_dict() for ln in doc.lines],
        credits=[{"credit_note_id": c.id, "number": c.number, "amount_usd": str(a)} for c, a in doc.applied],
        subtotal=str(doc.subtotal),
        credits_applied=str(doc.credits_applied),
        total=str(doc.total),
    )
    session.add(inv)
    record("invoices.issue", f"invoices/{inv.id}", doc.tenant_id, {"month": doc.month, "total_usd": inv.total})
    for credit, amount in doc.applied:
        note = notes[credit.id]
        left = Decimal(note.remaining) - amount
        note.remaining = str(left)
        note.state = "applied" if left == 0 else "partially_applied"
        note.applications = [
            *note.applications,
            {"invoice_id": inv.id, "number": inv.number, "amount_usd": str(amount)},
        ]
        record(
            "credit_notes.apply",
            f"credit-notes/{note.id}",
            doc.tenant_id,
            {"invoice": inv.number, "amount_usd": str(amount), "remaining_usd": note.remaining, "state": note.state},
        )
    return inv


def _sla_credit(
    session: orm.Session,
    cm: history.ClusterMonth,
    doc: invoices.Draft,
    month: str,
    record: _Auditor,
    terms: contracts.Contract,
) -> models_noc.CreditNote | None:
    lo, hi = events.month_bounds(month)
    result = cm.availability(lo, hi, terms)
    pct = terms.credit_percent(result.percent)
    charge = doc.cluster_charge(cm.cluster_id)
    amount = invoices.credit_amount(charge, pct)
    if amount <= 0:
        return None
    from velyrix.ops.noc import incidents as noc_incidents

    evidence = {
        "contract": terms.to_dict(),
        "availability": result.to_dict(lo),
        "availability_percent_exact": str(result.percent),
        "credit_percent": str(pct),
        "cluster_charge_usd": str(charge),
        "computation": f"{charge} USD x {pct}% = {amount} USD (rounded half up to the cent)",
        "incidents": noc_incidents.summaries(session, cm.cluster_id, lo, hi),
    }
    note = models_noc.CreditNote(
        tenant_id=cm.tenant_id,
        number=f"CN-{month.replace('-', '')}-{models.new_id('n')[-8:].upper()}",
        month=month,
        cluster_id=cm.cluster_id,
        amount=str(amount),
        remaining=str(amount),
        evidence=evidence,
    )
    session.add(note)
    record(
        "credit_notes.issue",
        f"credit-notes/{note.id}",
        cm.tenant_id,
        {"cluster": cm.cluster_name, "availability_percent": str(result.percent_shown), "amount_usd": str(amount)},
    )
    return note


def close_month(
    session: orm.Session, month: str, *, info: audit.RequestInfo, principal: Principal | None
) -> dict[str, Any]:
    """Close ``month``: meter it from the state history, issue every tenant's invoice with its open credits
    applied, then this month's SLA credit notes (applied by the next close). Returns a summary."""
    lo, hi = events.month_bounds(month)
    if session.scalar(sa.select(models_noc.BillingMonth).where(models_noc.BillingMonth.month == month)):
        raise MonthClosedError(month=month, hint="invoices of a closed month are final; credit notes correct them")
    new = ingest(session, usage_events(session, month))
    by_meter = meters.aggregate(stored_events(session, month))
    record = _Auditor(session, info, principal)
    per_tenant: dict[str, dict[meters.MeterKey, Decimal]] = {}
    for key, qty in by_meter.items():
        per_tenant.setdefault(key.tenant_id, {})[key] = qty
    credits = _open_credits(session)
    drafts: dict[str, invoices.Draft] = {}
    issued, notes_issued = [], []
    with session.no_autoflush:
        for tenant_id in sorted(set(per_tenant) | set(credits)):
            notes = {n.id: n for n in credits.get(tenant_id, [])}
            open_credits = [invoices.OpenCredit(n.id, n.number, Decimal(n.remaining)) for n in notes.values()]
            doc = invoices.draft(
                tenant_id,
                month,
                per_tenant.get(tenant_id, {}),
                gpu_price=_gpu_price,
                tier_price=_tier_price,
                credits=open_credits,
            )
            drafts[tenant_id] = doc
            issued.append(_issue_invoice(session, doc, notes, record).number)
        terms = contract_store.all_contracts(session)
        default = contracts.default()
        for cm in history.cluster_months(session, lo, hi):
            if cm.tenant_id in drafts:
                note = _sla_credit(session, cm, drafts[cm.tenant_id], month, record, terms.get(cm.tenant_id, default))
                if note is not None:
                    notes_issued.append(note.number)
    summary = {"month": month, "usage_events_new": new, "invoices": issued, "credit_notes": notes_issued}
    session.add(
        models_noc.BillingMonth(month=month, closed_by=principal.actor if principal else "system", summary=summary)
    )
    session.flush()
    return summary
