"""Invoices and credit notes, computed (pure: meters, prices and open credits in; documents out).

- A GPU line: GPU-minutes of one cluster and node type x the catalog's price per GPU-hour / 60.
- A storage line: TB-minutes of one volume x the tier's price per TB-month / minutes of the month.
- Each line rounded once (``money.cents``); subtotal = sum of lines; credits applied = open credit notes,
  oldest first, up to the subtotal; total = subtotal - credits applied (never negative); what a credit
  note could not apply stays on it and is carried to the next invoice.
- An SLA credit note: the contract's credit percent x the affected cluster's charge of the month (its GPU
  lines), rounded once; its evidence is the availability computation, the incidents and the windows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from velyrix.ops.billing import events, money
from velyrix.ops.billing.meters import MeterKey


@dataclass(frozen=True)
class Line:
    description: str
    kind: str
    resource: str
    cluster_id: str | None
    quantity: Decimal
    unit: str
    unit_price: Decimal
    amount: Decimal

    def to_dict(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "kind": self.kind,
            "resource": self.resource,
            "cluster_id": self.cluster_id,
            "quantity": str(self.quantity),
            "unit": self.unit,
            "unit_price_usd": str(self.unit_price),
            "amount_usd": str(self.amount),
        }


@dataclass
class OpenCredit:
    """A credit note with something left to apply."""

    id: str
    number: str
    remaining: Decimal


@dataclass
class Draft:
    """An invoice before it is stored: lines, totals and the credit applications."""

    tenant_id: str
    month: str
    lines: list[Line]
    subtotal: Decimal
    applied: list[tuple[OpenCredit, Decimal]] = field(default_factory=list)

    @property
    def credits_applied(self) -> Decimal:
        return sum((a for _, a in self.applied), Decimal(0))

    @property
    def total(self) -> Decimal:
        return self.subtotal - self.credits_applied

    def cluster_charge(self, cluster_id: str) -> Decimal:
        """The cluster's charge of the month: its GPU lines."""
        return sum((ln.amount for ln in self.lines if ln.kind == "gpu" and ln.cluster_id == cluster_id), Decimal(0))


def _minutes_in(month: str) -> int:
    lo, hi = events.month_bounds(month)
    return int((hi - lo).total_seconds() // 60)


def line_for(
    key: MeterKey, qty: Decimal, month: str, gpu_price: Callable[[str], Decimal], tier_price: Callable[[str], Decimal]
) -> Line:
    """The invoice line of one meter."""
    if key.kind == "gpu":
        unit_price = gpu_price(key.rate)
        hours = qty / 60
        return Line(
            f"{key.rate} GPU-hours, cluster {key.resource}",
            "gpu",
            key.resource,
            key.cluster_id,
            hours.quantize(Decimal("0.0001")),
            "GPU-hour",
            unit_price,
            money.cents(qty * unit_price / 60),
        )
    unit_price = tier_price(key.rate)
    minutes = _minutes_in(month)
    return Line(
        f"{key.rate} storage TB-months, volume {key.resource}",
        "storage",
        key.resource,
        key.cluster_id,
        (qty / minutes).quantize(Decimal("0.000001")),
        "TB-month",
        unit_price,
        money.cents(qty * unit_price / minutes),
    )


def draft(
    tenant_id: str,
    month: str,
    meters: dict[MeterKey, Decimal],
    *,
    gpu_price: Callable[[str], Decimal],
    tier_price: Callable[[str], Decimal],
    credits: list[OpenCredit],
) -> Draft:
    """The invoice of ``tenant_id`` for ``month`` with ``credits`` (oldest first) applied to it."""
    lines = [
        line_for(k, q, month, gpu_price, tier_price) for k, q in sorted(meters.items()) if k.tenant_id == tenant_id
    ]
    doc = Draft(tenant_id, month, lines, sum((ln.amount for ln in lines), Decimal(0)))
    left = doc.subtotal
    for credit in credits:
        use = min(left, credit.remaining)
        if use > 0:
            doc.applied.append((credit, use))
            left -= use
    return doc


def credit_amount(charge: Decimal, credit_percent: Decimal) -> Decimal:
    """The SLA credit for a cluster's ``charge`` of the month: ``charge x percent / 100``, rounded once."""
    return money.cents(charge * credit_percent / 100)
