"""``/v1/regions``: the catalog's regions with their capacity per node type (total, spare, in use,
available)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from velyrix import catalog, errors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require

router = APIRouter(prefix="/v1/regions", tags=["regions"], responses=schemas.PROBLEM_RESPONSES)


def out(ctx: Ctx, name: str) -> dict[str, Any]:
    region = catalog.region(name)
    in_use = ctx.scope.nodes_in_use(name)
    capacity = []
    for node_type, total in sorted(region.capacity.items()):
        spare = int(total * region.spare_fraction)
        used = in_use.get(node_type, 0)
        capacity.append(
            {
                "node_type": node_type,
                "total_nodes": total,
                "spare_nodes": spare,
                "in_use_nodes": used,
                "available_nodes": max(0, total - spare - used),
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
