"""Status pages in Statuspage's ``summary.json`` shape (``velyrix.ops.noc.statuspage``):
``GET /v1/status/tenants/{tenant_id}/summary.json`` (the tenant's keys, and the provider's) and the public
``GET /v1/status/regions/{region}/summary.json`` (no key: a region's page is for everyone, as a Statuspage
page is; it names no tenant). Point a Statuspage reader at either URL."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require, run_db
from velyrix.fleet import clock
from velyrix.ops.noc import statuspage_views

router = APIRouter(prefix="/v1/status", tags=["status"], responses=schemas.PROBLEM_RESPONSES)
PUBLIC_ROUTER = APIRouter(prefix="/v1/status", tags=["status"], responses=schemas.PROBLEM_RESPONSES)


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


@router.get("/tenants/{tenant_id}/summary.json", name="status.tenant_summary")
def tenant_summary(tenant_id: str, request: Request, ctx: Ctx = Depends(require("incidents:read"))) -> dict[str, Any]:
    """The tenant's status page: its delivered clusters as components, its unresolved incidents, its
    clusters' maintenance windows not yet ended, and the overall indicator."""
    return statuspage_views.tenant(ctx.scope, tenant_id, clock.now(), _base(request))


@PUBLIC_ROUTER.get("/regions/{region}/summary.json", name="status.region_summary")
async def region_summary(region: str, request: Request) -> JSONResponse:
    """A region's public status page: the control plane's API and a component per node type, the
    provider's unresolved incidents, the maintenance windows not yet ended; no key needed."""
    body = await run_db(request, statuspage_views.region, request.app, region, clock.now(), _base(request))
    return JSONResponse(body)
