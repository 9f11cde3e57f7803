"""SLA contracts as data: the catalog's default (``catalog/data/sla.toml``) and per-tenant contracts set by
the provider (HCL, ``velyrix.ops.sla.contract_hcl``). Percentages are ``Decimal`` (exact: 99.9 is not a
binary float), times in minutes. Definitions: docs/sla.md."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from velyrix import catalog, errors
from velyrix.declarations import rollout as rollout_decl

MEASURES: dict[str, str] = {
    "node-minutes": "healthy delivered node-minutes over committed node-minutes",
    "cluster-minutes": "minutes in which every committed node was healthy over all minutes",
}
"""How availability is measured (docs/sla.md, 'Availability')."""


@dataclass(frozen=True)
class CreditTier:
    """Availability strictly below ``below_percent`` earns ``credit_percent`` of the cluster's charge."""

    below_percent: Decimal
    credit_percent: Decimal


@dataclass(frozen=True)
class ResponseTarget:
    """Per priority: minutes to the first response, and between updates after it."""

    first_response_min: int
    update_every_min: int


@dataclass(frozen=True)
class Contract:
    """One SLA contract (see docs/sla.md for every field)."""

    name: str
    availability_target_percent: Decimal
    measure: str
    maintenance_notice_days: int
    degraded_counts_as_down: bool
    credit_tiers: tuple[CreditTier, ...]
    """Sorted by ``below_percent`` descending: the lowest tier that applies wins."""
    response: dict[str, ResponseTarget]
    escalation_policy: str = "default"
    maintenance_window: dict[str, Any] | None = None
    """The tenant's weekly maintenance window for staged rollouts (``days``, ``start`` "HH:MM", ``hours``,
    ``timezone``; ``velyrix.ops.rollouts``); None: the rollout's own window."""

    def credit_percent(self, availability_percent: Decimal) -> Decimal:
        """The credit (percent of the charge) for a measured availability: that of the lowest tier whose
        ``below_percent`` is above it, 0 when none is."""
        earned = Decimal(0)
        for tier in self.credit_tiers:
            if availability_percent < tier.below_percent:
                earned = tier.credit_percent
        return earned

    def to_dict(self) -> dict[str, Any]:
        """Plain data (percentages as strings, exact), the inverse of ``from_dict``."""
        out = {
            "name": self.name,
            "availability_target_percent": str(self.availability_target_percent),
            "measure": self.measure,
            "maintenance_notice_days": self.maintenance_notice_days,
            "degraded_counts_as_down": self.degraded_counts_as_down,
            "escalation_policy": self.escalation_policy,
            "credit": [
                {"below_percent": str(t.below_percent), "credit_percent": str(t.credit_percent)}
                for t in self.credit_tiers
            ],
            "response": {
                p: {"first_response_min": r.first_response_min, "update_every_min": r.update_every_min}
                for p, r in self.response.items()
            },
        }
        if self.maintenance_window is not None:
            out["maintenance_window"] = dict(self.maintenance_window)
        return out


def percent(value: Any, what: str) -> Decimal:
    """``value`` (number or string) as a percentage in [0, 100]; ``InvalidInputError`` otherwise."""
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise errors.InvalidInputError(f"{what} must be a number, got {value!r}") from None
    if not number.is_finite() or not Decimal(0) <= number <= Decimal(100):
        raise errors.InvalidInputError(f"{what} must be between 0 and 100, got {value}")
    return number


def from_dict(name: str, raw: dict[str, Any]) -> Contract:
    """A contract from plain data (``to_dict``'s shape, or a section of ``sla.toml``); checks ranges."""
    measure = str(raw.get("measure", "node-minutes"))
    if measure not in MEASURES:
        raise errors.UnknownNameError("availability measure", measure, MEASURES)
    tiers = tuple(
        sorted(
            (
                CreditTier(percent(t["below_percent"], "below_percent"), percent(t["credit_percent"], "credit_percent"))
                for t in raw.get("credit", [])
            ),
            key=lambda t: t.below_percent,
            reverse=True,
        )
    )
    response = {
        str(p): ResponseTarget(int(r["first_response_min"]), int(r["update_every_min"]))
        for p, r in dict(raw.get("response", {})).items()
    }
    for p, r in response.items():
        if p not in ("P1", "P2", "P3", "P4"):
            raise errors.UnknownNameError("priority", p, ("P1", "P2", "P3", "P4"))
        if r.first_response_min <= 0 or r.update_every_min <= 0:
            raise errors.InvalidInputError(f"response targets of {p} must be positive minutes")
    policy = str(raw.get("escalation_policy", "default"))
    policies = catalog.load_toml("sla.toml").get("escalation_policy", {})
    if policy not in policies:
        raise errors.UnknownNameError("escalation policy", policy, policies)
    notice = int(raw.get("maintenance_notice_days", 5))
    if not 0 <= notice <= 365:
        raise errors.InvalidInputError(f"maintenance_notice_days must be 0..365, got {notice}")
    window = raw.get("maintenance_window")
    if window is not None:
        found = rollout_decl.problems_of_window(window)
        if found:
            raise errors.InvalidInputError(f"maintenance_window: {found[0]}")
        window = {"timezone": "UTC", **dict(window)}
        window["days"] = list(window["days"])
    return Contract(
        maintenance_window=window,
        name=name,
        availability_target_percent=percent(raw["availability_target_percent"], "availability_target_percent"),
        measure=measure,
        maintenance_notice_days=notice,
        degraded_counts_as_down=bool(raw.get("degraded_counts_as_down", True)),
        credit_tiers=tiers,
        response=response,
        escalation_policy=policy,
    )


def default() -> Contract:
    """The catalog's default contract (``sla.toml`` ``[contract.default]``)."""
    return from_dict("default", catalog.load_toml("sla.toml")["contract"]["default"])
