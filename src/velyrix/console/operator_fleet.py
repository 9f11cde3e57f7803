"""The operator's fleet pages (provider staff: ``fleet:read``, the queues ``fleet:operate`` like the API's
RMA records): the fleet grid (every node by region, scalable unit and rack, one cell per node coloured by
status, filtered by GET parameters), the quarantine and RMA queues with their evidence, and capacity per
region and node type (the API's own figures, ``api.routes.regions``). Reads go through the provider's
scope, as the API's routes do; a tenant's session gets 403 (no tenant role has these scopes)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from velyrix import catalog
from velyrix.console import access, fleet_grid, grid, render
from velyrix.controlplane import scoping
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.api.routes import node_health, regions
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import cloud as cloud_tables
from velyrix.controlplane.db.models import health as health_tables
from velyrix.fleet import states

router = APIRouter(include_in_schema=False)
MAX_FLEET_NODES = 20_000
"""Nodes the grid reads (a region of the catalog holds fewer)."""
MAX_QUEUE = 200
"""Nodes per queue shown, oldest first."""
NODE_COLUMNS = ("id", "name", "region", "node_type", "tenant_id", "provisioning_state", "fleet_stage", "hardware")


def read_fleet(scope: scoping.Scope) -> tuple[list[Any], dict[str, str], dict[str, int | None]]:
    nodes = scope.columns(models.Node, NODE_COLUMNS, MAX_FLEET_NODES)
    tenants = {t.id: t.name for t in scope.columns(models.Tenant, ("id", "name"), MAX_FLEET_NODES)}
    table = health_tables.NodeReport
    health = {r.node_id: r.health_level for r in scope.columns(table, ("node_id", "health_level"), MAX_FLEET_NODES)}
    return nodes, tenants, health


@router.get("/console/fleet", name="console.fleet")
async def fleet(
    request: Request,
    ctx: Ctx = Depends(access.reads("fleet:read")),
    region: str = Query("", max_length=63),
    state: str = Query("", max_length=32),
    node_type: str = Query("", max_length=63),
    tenant: str = Query("", max_length=63),
) -> Response:
    """Every node of the fleet passing the filters, by region, scalable unit and rack."""
    found = await ctx.read(read_fleet)
    wanted = {"region": region, "state": state, "node_type": node_type, "tenant": tenant}
    return fleet_page(request, found, wanted)


def fleet_page(
    request: Request,
    found: tuple[list[Any], dict[str, str], dict[str, int | None]],
    wanted: dict[str, str],
    status: int = 200,
    **form: Any,
) -> Response:
    """The fleet page over ``found`` (``read_fleet``'s nodes, tenant names, health levels) filtered by
    ``wanted``; ``form``: the drain/reboot form's ``form`` values, its ``field_errors`` after a refusal
    or the ``done`` order (``operator_nodes.operate``)."""
    nodes, tenants, health = found
    units = fleet_grid.layout(nodes, tenants, health, wanted)
    return render.page(
        request,
        "operator_fleet.html",
        status,
        title="Fleet",
        units=units,
        shown=sum(u.count for u in units),
        total=len(nodes),
        wanted=wanted,
        regions=catalog.region_names(),
        node_types=catalog.node_type_names(),
        statuses=list(fleet_grid.STATUS_LETTERS),
        letters=fleet_grid.STATUS_LETTERS,
        tenants=sorted(tenants.values()),
        form=form.get("form", {}),
        field_errors=form.get("field_errors", {}),
        done=form.get("done"),
    )


def _queue(ctx: Ctx, stage: str) -> list[dict[str, Any]]:
    """The nodes in ``stage`` with their last report's summary, GPUs (XID and ECC counts) and last events."""
    nodes, _ = ctx.scope.page(models.Node, filters={"fleet_stage": stage}, limit=MAX_QUEUE)
    found = []
    for node in nodes:
        report = ctx.scope.latest(health_tables.NodeReport, node_id=node.id)
        events, _ = ctx.scope.page(cloud_tables.NodeEvent, filters={"node_id": node.id}, limit=scoping.MAX_PAGE)
        gpus = grid.gpus(getattr(report, "sample", None), node.hardware)
        found.append(
            {
                "node": node,
                "reason": (report.health_summary if report is not None else "") or node.last_error or "",
                "action": getattr(report, "health_action", None),
                "gpus": [g for g in gpus if g.xids or g.ecc_sbe or g.ecc_dbe],
                "events": events[-5:],
            }
        )
    return found


@router.get("/console/fleet/queues", name="console.fleet_queues")
def queues(request: Request, ctx: Ctx = Depends(access.reads("fleet:operate"))) -> Response:
    """The quarantine queue, the RMA queue (nodes in stage RMA) and the RMA records with their evidence."""
    return queues_page(request, ctx)


def queues_page(request: Request, ctx: Ctx, status: int = 200, **form: Any) -> Response:
    """The queues page; ``form``: the release/RMA form of one node (``node_id``, ``action``, ``reason``,
    ``override``) and its ``field_errors`` after a refusal (``operator_nodes``)."""
    rma = node_health.list_rma(ctx, None, None, scoping.MAX_PAGE)["items"]
    return render.page(
        request,
        "operator_queues.html",
        status,
        title="Quarantine and RMA",
        quarantined=_queue(ctx, states.QUARANTINED),
        in_rma=_queue(ctx, states.RMA),
        rma_records=rma,
        form=form.get("form", {}),
        field_errors=form.get("field_errors", {}),
    )


@router.get("/console/fleet/capacity", name="console.fleet_capacity")
def capacity(request: Request, ctx: Ctx = Depends(access.reads("fleet:read"))) -> Response:
    """Per region and node type: total, allocated, free to sell, quarantined, RMA and spares."""
    rows = fleet_grid.capacity(regions.list_regions(ctx)["items"])
    return render.page(request, "operator_capacity.html", title="Capacity", rows=rows)
