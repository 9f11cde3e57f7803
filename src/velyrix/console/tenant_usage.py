"""The tenant's GPU usage: allocated vs busy GPU-hours per team and per cost center, from the GPU time the
control plane meters per job out of the node agents' reports (``controlplane/job_usage.py``: a job's GPUs
times the report intervals it was mapped in; busy weighted by each GPU's utilization), read through the
principal's scope. A bar chart per grouping is drawn on the server as inline SVG (readable without
JavaScript), next to a text table of the same figures. Scope ``clusters:read``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from velyrix.console import access, render
from velyrix.controlplane import scoping
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.db.models.usage import JobUsage

router = APIRouter(include_in_schema=False)
MOST = 20000
"""Job rows one page reads."""
BAR_W = 480
"""Width (px) of the longest bar of a chart."""


@dataclass(frozen=True)
class Group:
    """One team or cost center: GPU-hours allocated and busy, and its jobs."""

    name: str
    allocated_h: float
    busy_h: float
    jobs: int

    @property
    def utilization_pct(self) -> float:
        return 100.0 * self.busy_h / self.allocated_h if self.allocated_h else 0.0


def groups(rows: Iterable[Any], key: str) -> list[Group]:
    """``rows`` (``JobUsage``) summed by ``key`` (``team`` or ``cost_center``; empty: ``(none)``), most
    allocated first. GPU-hours = GPU-seconds / 3600."""
    sums: dict[str, list[float]] = {}
    jobs: dict[str, set[str]] = {}
    for r in rows:
        name = getattr(r, key) or "(none)"
        s = sums.setdefault(name, [0.0, 0.0])
        s[0] += float(r.allocated_gpu_s)
        s[1] += float(r.busy_gpu_s)
        jobs.setdefault(name, set()).add(r.hpc_job)
    out = [Group(n, a / 3600.0, b / 3600.0, len(jobs[n])) for n, (a, b) in sums.items()]
    return sorted(out, key=lambda g: (-g.allocated_h, g.name))


def chart(title: str, data: Sequence[Group]) -> dict[str, Any]:
    """The geometry of a horizontal bar chart: per group an allocated bar and a busy bar (px), scaled to the
    largest allocation; the template draws it as SVG."""
    top = max((g.allocated_h for g in data), default=0.0) or 1.0
    bars = [
        {
            "name": g.name,
            "y": 24 + i * 44,
            "allocated_w": round(BAR_W * g.allocated_h / top, 1),
            "busy_w": round(BAR_W * g.busy_h / top, 1),
            "group": g,
        }
        for i, g in enumerate(data)
    ]
    return {"title": title, "bars": bars, "height": 40 + 44 * len(bars), "width": BAR_W + 260}


@router.get("/console/usage", name="console.usage")
def usage(request: Request, ctx: Ctx = Depends(access.reads("clusters:read"))) -> Response:
    """GPU-hours allocated and busy per team and per cost center, as charts and tables."""
    found: list[Any] = []
    cursor = None
    while len(found) < MOST:
        rows, cursor = ctx.scope.page(JobUsage, filters={}, cursor=cursor, limit=scoping.MAX_PAGE)
        found.extend(rows)
        if cursor is None:
            break
    teams, centers = groups(found, "team"), groups(found, "cost_center")
    charts = [("team", "Team", chart("GPU-hours per team", teams))]
    charts.append(("cost-center", "Cost center", chart("GPU-hours per cost center", centers)))
    return render.page(
        request, "usage.html", charts=charts, tables={"team": teams, "cost-center": centers}, title="GPU usage"
    )
