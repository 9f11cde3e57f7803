"""Console pages that read: ``/`` (to the console), ``/console`` (to the clusters), ``/console/sign-in``
(the tenant's single sign-on), the clusters list, a cluster (phases, conditions, events; live through
``live``), its node grid and its signed acceptance report (a download of the API's document). Every
read goes through the principal's scope (``controlplane.scoping``), as the API's routes do: another
tenant's id answers 404 like a missing one."""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse, Response

from velyrix.console import access, grid, render
from velyrix.controlplane import scoping
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.api.routes import clusters as cluster_routes
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import health as health_tables
from velyrix.controlplane.identity import login, sessions

router = APIRouter(include_in_schema=False)
TENANT_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
MAX_GRID_NODES = 4096
"""Nodes one grid page renders (the largest cluster the catalog's regions sell is smaller)."""


@router.get("/", name="console.root")
def root(request: Request) -> Response:
    """The console when signed in (a session cookie), else its sign-in page."""
    target = render.PREFIX + ("/clusters" if request.cookies.get(sessions.COOKIE) else "/sign-in")
    return RedirectResponse(target, status_code=303)


@router.get("/console", name="console.home")
def home() -> Response:
    return RedirectResponse(render.PREFIX + "/clusters", status_code=303)


@router.get("/console/sign-in", name="console.sign_in")
def sign_in(
    tenant: str = Query("", max_length=63),
    next: str = Query("", max_length=login.MAX_NEXT_CHARS),
) -> Response:
    """The sign-in form; with ``tenant``, on to that tenant's single sign-on (``/auth/{tenant}/login``),
    which lands back on ``next`` (a console path; anything else: ``/console/clusters``)."""
    landing = login.console_target(next) if next else login.CONSOLE_LANDING
    if not tenant:
        return render.html("sign_in.html", principal=None, csrf="", tenant="", error="", next=landing)
    if not TENANT_NAME.match(tenant):
        error = "a tenant name: lower-case letters, digits and dashes, starting with a letter or digit"
        return render.html("sign_in.html", 422, principal=None, csrf="", tenant=tenant, error=error, next=landing)
    query = urllib.parse.urlencode({"next": landing})
    return RedirectResponse(f"/auth/{tenant}/login?{query}", status_code=303)


@router.get("/console/static/{name:path}", name="console.static")
def static(name: str) -> Response:
    return render.static_file(name)


@router.get("/console/clusters", name="console.clusters")
async def clusters(request: Request, ctx: Ctx = Depends(access.reads("clusters:read"))) -> Response:
    """The tenant's clusters (name, region, type, nodes, phase), at most a page of the API's size."""
    names = ("id", "name", "region", "node_type", "node_count", "phase", "updated_at")
    rows = await ctx.read(lambda scope: scope.columns(models.Cluster, names))
    return render.page(request, "clusters.html", clusters=rows, title="Clusters")


def _cluster(ctx: Ctx, cluster_id: str) -> models.Cluster:
    return ctx.scope.get(models.Cluster, cluster_id, "cluster")


@router.get("/console/clusters/{cluster_id}", name="console.cluster")
def cluster(cluster_id: str, request: Request, ctx: Ctx = Depends(access.reads("clusters:read"))) -> Response:
    """A cluster: its phase (live), conditions, phase history and events (newest first)."""
    row = _cluster(ctx, cluster_id)
    has_report = ctx.scope.latest(models.AcceptanceReport, cluster_id=row.id) is not None
    return render.page(request, "cluster.html", cluster=row, has_report=has_report, title=row.name)


def _all(ctx: Ctx, model: Any, most: int, **where: Any) -> list[Any]:
    """Up to ``most`` visible rows of ``model`` through the scope's pages (``filters`` or ``extra``)."""
    found: list[Any] = []
    cursor = None
    while len(found) < most:
        rows, cursor = ctx.scope.page(model, cursor=cursor, limit=scoping.MAX_PAGE, **where)
        found.extend(rows)
        if cursor is None:
            break
    return found[:most]


@router.get("/console/clusters/{cluster_id}/nodes", name="console.cluster_nodes")
def cluster_nodes(cluster_id: str, request: Request, ctx: Ctx = Depends(access.reads("nodes:read"))) -> Response:
    """The cluster's node grid: scalable units by rail, each node and GPU coloured by health."""
    row = _cluster(ctx, cluster_id)
    nodes = _all(ctx, models.Node, MAX_GRID_NODES, filters={"cluster_id": row.id})
    table = health_tables.NodeReport
    reports = {}
    for start in range(0, len(nodes), scoping.MAX_PAGE):
        ids = [n.id for n in nodes[start : start + scoping.MAX_PAGE]]
        reports.update({r.node_id: r for r in _all(ctx, table, len(ids), extra=[table.node_id.in_(ids)])})
    units = grid.layout(nodes, reports)
    return render.page(
        request, "nodes.html", cluster=row, units=units, rails=grid.rails_of(units), title=f"{row.name}: nodes"
    )


@router.get("/console/clusters/{cluster_id}/acceptance.json", name="console.acceptance")
def acceptance(cluster_id: str, ctx: Ctx = Depends(access.reads("clusters:read"))) -> Response:
    """The signed acceptance report as the API answers it (``clusters.acceptance``), as a download;
    ``velyrix verify acceptance FILE`` checks its signature."""
    document = cluster_routes.acceptance_report(cluster_id, ctx)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(document.get("report", {}).get("cluster", {}).get("name", cluster_id)))
    body = json.dumps(document, indent=2, sort_keys=True, default=str).encode()
    disposition = f'attachment; filename="{name}-acceptance.json"'
    return Response(body, media_type="application/json", headers={"content-disposition": disposition})
