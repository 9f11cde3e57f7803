"""The tenant's volumes by storage tier: per tier (the catalog's ``storage_tiers.toml``: what it is, its
price per TB-month) the volumes, their size in TB, state and the cluster they mount on, and the tier's total
with its monthly list price. Read through the principal's scope, the query of the API's ``GET /v1/volumes``
(``api/routes/volumes.py``). Scope ``volumes:read``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from velyrix import catalog
from velyrix.console import access, render
from velyrix.controlplane import scoping
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.db import models

router = APIRouter(include_in_schema=False)
MOST = 2000
"""Volumes one page lists."""


@dataclass
class Tier:
    """One storage tier's volumes; ``size_tb`` their total (TB, 10^12 bytes), ``monthly_usd`` its list price."""

    name: str
    description: str
    price_usd_per_tb_month: float
    volumes: list[Any] = field(default_factory=list)

    @property
    def size_tb(self) -> float:
        return float(sum(v.size_tb for v in self.volumes))

    @property
    def monthly_usd(self) -> float:
        return self.size_tb * self.price_usd_per_tb_month


def tiers_of(volumes: list[Any]) -> list[Tier]:
    """``volumes`` grouped by tier, in the catalog's order (a tier the catalog no longer sells last)."""
    tiers: dict[str, Tier] = {}
    for name in catalog.storage_tier_names():
        t = catalog.storage_tier(name)
        tiers[name] = Tier(name, t.description, t.price_usd_per_tb_month)
    for v in volumes:
        tiers.setdefault(v.tier, Tier(v.tier, "(not in the catalog)", 0.0)).volumes.append(v)
    return [t for t in tiers.values() if t.volumes]


@router.get("/console/volumes", name="console.volumes")
def volumes(request: Request, ctx: Ctx = Depends(access.reads("volumes:read"))) -> Response:
    """The tenant's volumes by tier, with the names of the clusters they mount on."""
    found: list[Any] = []
    cursor = None
    while len(found) < MOST:
        rows, cursor = ctx.scope.page(models.Volume, filters={}, cursor=cursor, limit=scoping.MAX_PAGE)
        found.extend(rows)
        if cursor is None:
            break
    names = {c.id: c.name for c in ctx.scope.columns(models.Cluster, ("id", "name"))}
    return render.page(request, "volumes.html", tiers=tiers_of(found[:MOST]), names=names, title="Volumes")
