"""The digital twin's fault kinds as typed records (``faults.toml``): the device each one hits, its effects,
the XIDs it raises and its precursor trend; and the fault the twin injects for each failure cause.

Every XID named here must be in ``xids.toml`` and every cause in ``failure_rates.toml`` (checked on load).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.catalog import health
from velyrix.catalog.reader import failure_rates, load_toml

DEVICES = ("gpu", "ib_port", "nvme")


@dataclass(frozen=True)
class FaultKind:
    """One fault kind of ``faults.toml`` (see the file's header for each effect)."""

    name: str
    device: str
    xids: tuple[int, ...] = ()
    add: dict[str, float] = field(default_factory=dict)
    assign: dict[str, Any] = field(default_factory=dict)
    """Attributes set to a value (``set`` in the file)."""
    at_least: dict[str, float] = field(default_factory=dict)
    factor_default: float | None = None
    factor_set: tuple[str, ...] = ()
    factor_at_most: tuple[str, ...] = ()
    factor_scales: dict[str, str] = field(default_factory=dict)
    throttle: tuple[str, ...] = ()
    precursor: str | None = None
    precursor_rate_per_h: float = 0.0


@dataclass(frozen=True)
class CauseFault:
    """The fault the twin injects for one failure cause: its kind, and the XID for kind ``xid``."""

    kind: str
    xid: int | None = None


def _kind(name: str, raw: dict[str, Any]) -> FaultKind:
    kind = FaultKind(
        name=name,
        device=raw["device"],
        xids=tuple(int(x) for x in raw.get("xids", ())),
        add=dict(raw.get("add", {})),
        assign=dict(raw.get("set", {})),
        at_least=dict(raw.get("at_least", {})),
        factor_default=raw.get("factor_default"),
        factor_set=tuple(raw.get("factor_set", ())),
        factor_at_most=tuple(raw.get("factor_at_most", ())),
        factor_scales=dict(raw.get("factor_scales", {})),
        throttle=tuple(raw.get("throttle", ())),
        precursor=raw.get("precursor"),
        precursor_rate_per_h=float(raw.get("precursor_rate_per_h", 0.0)),
    )
    where = f"faults.toml kind {name}"
    if kind.device not in DEVICES:
        raise errors.CatalogError(f"{where}: unknown device '{kind.device}' (valid: {', '.join(DEVICES)})")
    unknown = [x for x in kind.xids if x not in health.xid_codes()]
    if unknown:
        raise errors.CatalogError(f"{where}: XIDs {unknown} are not in xids.toml")
    return kind


@functools.cache
def fault_kinds() -> dict[str, FaultKind]:
    """Every fault kind, in the order of ``faults.toml``."""
    return {name: _kind(name, raw) for name, raw in load_toml("faults.toml")["kind"].items()}


@functools.cache
def cause_faults() -> dict[str, CauseFault]:
    """Failure cause (``failure_rates.toml``) -> the fault the twin injects for it."""
    raw = load_toml("faults.toml")
    kinds = fault_kinds()
    out = {name: CauseFault(kind=row["kind"], xid=row.get("xid")) for name, row in raw["cause"].items()}
    causes = {c.name for c in failure_rates().causes}
    if set(out) - causes:
        raise errors.CatalogError(f"faults.toml [cause]: {sorted(set(out) - causes)} not in failure_rates.toml")
    if any(c.kind not in kinds for c in out.values()):
        raise errors.CatalogError("faults.toml [cause]: a cause names an unknown fault kind")
    return out


def cause_fault(cause: str) -> CauseFault:
    """The fault for ``cause``; ``[default_cause]`` for a cause the table lacks."""
    found = cause_faults().get(cause)
    if found is not None:
        return found
    row = load_toml("faults.toml")["default_cause"]
    return CauseFault(kind=row["kind"], xid=row.get("xid"))
