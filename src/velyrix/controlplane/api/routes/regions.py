"""``/v1/regions``: the catalog's regions with their capacity per node type, counted from the fleet's node
table by the function the allocator uses (``reconcile.allocation.fleet_capacity``): total, spare, in use,
available, and nodes per state (quarantined, RMA, burn-in, sanitizing: none available). A tenant sees its own
usage only (``in_use_nodes`` counts its clusters' nodes); provider keys see the whole region's."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from velyrix import catalog, errors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require

router = APIRouter(prefix="/v1/regions", tags=["regions"], responses=schemas.PROBLEM_RESPONSES)


def out(ctx: Ctx, name: str) -> dict[str, Any]:
    region = catalog.region(name)
    fleet = ctx.scope.fleet_capacity(name)
    own = None if ctx.principal.is_provider else ctx.scope.own_nodes_in_use(name)
    capacity = []
    for node_type in sorted(set(region.capacity) | set(fleet)):
        cap = fleet.get(node_type)
        capacity.append(
            {
                "node_type": node_type,
                "total_nodes": cap.total if cap else 0,
                "spare_nodes": cap.spare if cap else 0,
                "in_use_nodes": (cap.in_use if cap else 0) if own is None else own.get(node_type, 0),
                "available_nodes": cap.available if cap else 0,
                "nodes_by_state": cap.by_state if cap and own is None else {},
            }
        )
    return {
        "name": region.name,
        "description": region.description,
        "scalable_unit_nodes": region.scalable_unit_nodes,
        "spare_fraction": region.spare_fraction,
        "capacity": capacity,
    }


@router.get("", name="regions.list", response_model=schemas.Page[schemas.RegionOut])
def list_regions(ctx: Ctx = Depends(require("regions:read"))) -> dict[str, Any]:
    return {"items": [out(ctx, n) for n in catalog.region_names()], "next_cursor": None}


@router.get("/{region}", name="regions.get", response_model=schemas.RegionOut)
def get_region(region: str, ctx: Ctx = Depends(require("regions:read"))) -> dict[str, Any]:
    names = catalog.region_names()
    if region not in names:
        near = errors.closest(region, names)
        raise errors.NotFoundError(
            kind="region",
            name=region,
            hint=(f"did you mean '{near[0]}'? " if near else "") + "valid: " + ", ".join(names),
        )
    return out(ctx, region)
