"""Monthly availability of one cluster, minute by minute (docs/sla.md, 'Availability').

Inputs are intervals (UTC datetimes): when each node delivered healthy capacity to the cluster, the
cluster's committed node count and service period, and the maintenance windows with the time they were
announced. A minute counts for a node only when the node was healthy for all of it (healthy starts are
rounded up to the minute, healthy ends down: a minute with any downtime is down). A window announced at
least ``notice_days`` before it starts is excluded from the month; any other window counts like any
minute. Pure: no database, no clock.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, Decimal
from typing import Any

import numpy as np

MINUTE = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class Window:
    """A maintenance window of the cluster (or its region), and when the tenant was told."""

    start: dt.datetime
    end: dt.datetime
    announced_at: dt.datetime | None
    label: str = ""


@dataclass(frozen=True)
class Run:
    """Evidence: minutes ``[start_min, end_min)`` of the month with ``healthy`` nodes; ``excluded`` when
    inside an announced maintenance window."""

    start_min: int
    end_min: int
    healthy: int
    excluded: bool

    def to_dict(self, month_start: dt.datetime) -> dict[str, Any]:
        return {
            "from": (month_start + self.start_min * MINUTE).isoformat(),
            "to": (month_start + self.end_min * MINUTE).isoformat(),
            "minutes": self.end_min - self.start_min,
            "healthy_nodes": self.healthy,
            "excluded": self.excluded,
        }


@dataclass
class Availability:
    """One cluster's month: the counts behind the figure, the figure, and the minute-by-minute runs."""

    cluster: str
    measure: str
    committed_nodes: int
    counted_minutes: int
    excluded_minutes: int
    committed_node_minutes: int
    delivered_node_minutes: int
    up_minutes: int
    """Counted minutes in which every committed node was healthy."""
    runs: list[Run] = field(default_factory=list)
    windows: list[dict[str, Any]] = field(default_factory=list)
    degraded_node_minutes: int = 0
    """Healthy node-minutes in which the node ran degraded (``subtract``), counted or not."""
    degraded_counts_as_down: bool = False
    """Whether those minutes were left out of ``delivered_node_minutes`` (the contract's choice)."""

    @property
    def percent(self) -> Decimal:
        """Exact to 28 digits: what credit tiers compare against. 100 for a month with nothing counted."""
        if self.measure == "cluster-minutes":
            num, den = self.up_minutes, self.counted_minutes
        else:
            num, den = self.delivered_node_minutes, self.committed_node_minutes
        return Decimal(100) if den == 0 else Decimal(num * 100) / Decimal(den)

    @property
    def percent_shown(self) -> Decimal:
        """``percent`` cut (never rounded up) to 3 decimals, as reports print it."""
        return self.percent.quantize(Decimal("0.001"), rounding=ROUND_DOWN)

    def to_dict(self, month_start: dt.datetime) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "measure": self.measure,
            "availability_percent": str(self.percent_shown),
            "committed_nodes": self.committed_nodes,
            "counted_minutes": self.counted_minutes,
            "excluded_minutes": self.excluded_minutes,
            "committed_node_minutes": self.committed_node_minutes,
            "delivered_node_minutes": self.delivered_node_minutes,
            "up_minutes": self.up_minutes,
            "degraded_node_minutes": self.degraded_node_minutes,
            "degraded_counts_as_down": self.degraded_counts_as_down,
            "maintenance_windows": self.windows,
            "evidence": [r.to_dict(month_start) for r in self.runs],
        }


def subtract(
    spans: Sequence[tuple[dt.datetime, dt.datetime]], cuts: Sequence[tuple[dt.datetime, dt.datetime]]
) -> list[tuple[dt.datetime, dt.datetime]]:
    """``spans`` (one node's healthy intervals) less ``cuts`` (its degraded intervals): what is left of each
    span outside every cut. ``compute`` then rounds what is left inward, so a minute touched by a cut is
    down."""
    out: list[tuple[dt.datetime, dt.datetime]] = []
    ordered = sorted(cuts)
    for a, b in spans:
        at = a
        for c, d in ordered:
            if d <= at or c >= b:
                continue
            if c > at:
                out.append((at, c))
            at = max(at, d)
        if at < b:
            out.append((at, b))
    return out


def _minute(t: dt.datetime, start: dt.datetime, *, up: bool) -> int:
    seconds = (t - start).total_seconds()
    whole = int(seconds // 60)
    return whole + 1 if up and seconds > whole * 60 else whole


def _span(a: dt.datetime, b: dt.datetime, start: dt.datetime, minutes: int) -> tuple[int, int]:
    """[a, b) as whole minutes inside the month: start rounded up, end rounded down."""
    lo = max(0, min(minutes, _minute(a, start, up=True)))
    hi = max(0, min(minutes, _minute(b, start, up=False)))
    return lo, max(lo, hi)


def _runs(healthy: np.ndarray[Any, Any], excluded: np.ndarray[Any, Any], lo: int, hi: int) -> list[Run]:
    if hi <= lo:
        return []
    key = healthy[lo:hi] * 2 + excluded[lo:hi]
    cuts = np.flatnonzero(np.diff(key)) + 1
    edges = [0, *cuts.tolist(), hi - lo]
    return [
        Run(lo + a, lo + b, int(healthy[lo + a]), bool(excluded[lo + a]))
        for a, b in zip(edges, edges[1:], strict=False)
    ]


def compute(
    cluster: str,
    *,
    month_start: dt.datetime,
    month_end: dt.datetime,
    committed_nodes: int,
    service: tuple[dt.datetime, dt.datetime],
    healthy: Sequence[tuple[dt.datetime, dt.datetime]],
    windows: Sequence[Window] = (),
    notice_days: int = 5,
    measure: str = "node-minutes",
) -> Availability:
    """Availability of ``cluster`` over ``[month_start, month_end)``.

    ``service`` is when the cluster was committed (created .. deleted, clipped to the month); ``healthy``
    the intervals in which one node delivered healthy capacity (one entry per node and interval; more
    healthy nodes than committed count as committed).
    """
    minutes = int((month_end - month_start).total_seconds() // 60)
    count = np.zeros(minutes + 1, dtype=np.int64)
    for a, b in healthy:
        lo, hi = _span(a, b, month_start, minutes)
        count[lo] += 1
        count[hi] -= 1
    nodes = np.minimum(np.cumsum(count)[:minutes], committed_nodes)
    excluded = np.zeros(minutes, dtype=np.int64)
    described = []
    for w in windows:
        announced = w.announced_at is not None and w.announced_at <= w.start - dt.timedelta(days=notice_days)
        lo, hi = _span(w.start, w.end, month_start, minutes)
        if announced:
            excluded[lo:hi] = 1
        described.append(
            {
                "label": w.label,
                "from": w.start.isoformat(),
                "to": w.end.isoformat(),
                "announced_at": w.announced_at.isoformat() if w.announced_at else None,
                "excluded": announced,
                "why": f"announced at least {notice_days} days ahead"
                if announced
                else f"not announced {notice_days} days ahead: counted",
            }
        )
    s_lo, s_hi = _span(service[0], service[1], month_start, minutes)
    in_service = np.zeros(minutes, dtype=bool)
    in_service[s_lo:s_hi] = True
    counted = in_service & (excluded == 0)
    n_counted = int(counted.sum())
    return Availability(
        cluster=cluster,
        measure=measure,
        committed_nodes=committed_nodes,
        counted_minutes=n_counted,
        excluded_minutes=int((in_service & (excluded == 1)).sum()),
        committed_node_minutes=n_counted * committed_nodes,
        delivered_node_minutes=int(nodes[counted].sum()),
        up_minutes=int((counted & (nodes >= committed_nodes)).sum()),
        runs=_runs(nodes, excluded, s_lo, s_hi),
        windows=described,
    )
