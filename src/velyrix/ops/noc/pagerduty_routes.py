"""PagerDuty Events v2 compatibility: ``/v1/event-integrations`` (the provider's NOC creates routing keys,
each for one service of a tenant or of the provider) and ``POST /v1/pagerduty/v2/enqueue``, PagerDuty's
``/v2/enqueue`` under a base URL of ``https://HOST/v1/pagerduty``: a sender (PagerDuty's own client, an
Alertmanager ``pagerduty_configs`` receiver, any Events v2 integration) points its events URL here.

The enqueue route answers in PagerDuty's shape, not problem+json: 202 ``{"status": "success", "message":
"Event processed", "dedup_key": ...}``, 400 ``{"status": "invalid event", "message": ..., "errors": [...]}``;
the routing key in the body is the credential (no ``Authorization`` header), so the route is in
``ENQUEUE_ROUTER``, outside the bearer-key routers of ``velyrix.ops.service.ROUTERS``."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, request_info, require, run_db
from velyrix.fleet import clock
from velyrix.ops.noc import pagerduty_views

router = APIRouter(prefix="/v1/event-integrations", tags=["alerts"], responses=schemas.PROBLEM_RESPONSES)
ENQUEUE_ROUTER = APIRouter(prefix="/v1/pagerduty", tags=["alerts"])


class IntegrationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    service: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._:/-]*$")
    tenant_id: str | None = Field(None, max_length=32, description="the tenant whose incidents the events open")
    cluster_id: str | None = Field(None, max_length=32, description="the cluster (and so the tenant) they concern")


class IntegrationOut(BaseModel):
    id: str
    service: str
    tenant_id: str | None
    cluster_id: str | None
    key_prefix: str
    created_at: dt.datetime
    revoked_at: dt.datetime | None


class IntegrationCreated(IntegrationOut):
    routing_key: str = Field(description="the Events v2 routing key (32 characters), shown only here")


@router.post("", name="event_integrations.create", response_model=IntegrationCreated, status_code=201)
def create(body: IntegrationIn, ctx: Ctx = Depends(require("incidents:write"))) -> dict[str, Any]:
    """A routing key for PagerDuty Events v2 senders: their events open incidents for ``service``, given to
    the cluster's (or the tenant's) tenant; without either, to the provider."""
    data = pagerduty_views.create(ctx.scope, body.service, body.tenant_id, body.cluster_id)
    ctx.audit(f"event-integrations/{data['id']}", status_code=201, tenant_id=data["tenant_id"])
    ctx.commit()
    return data


@router.get("", name="event_integrations.list", response_model=schemas.Page[IntegrationOut])
def list_integrations(
    ctx: Ctx = Depends(require("incidents:write")),
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    """The integrations (never their keys), oldest first."""
    items, nxt = pagerduty_views.page(ctx.scope, cursor, limit)
    return {"items": items, "next_cursor": nxt}


@ENQUEUE_ROUTER.post(
    "/v2/enqueue",
    name="alerts.pagerduty",
    status_code=202,
    responses={400: {"description": "invalid event: `errors` says what"}},
)
async def enqueue(request: Request) -> JSONResponse:
    """A PagerDuty Events v2 event (``trigger``, ``acknowledge``, ``resolve``): opens, acknowledges or
    resolves the incident of its ``dedup_key`` for the routing key's service."""
    raw = await request.body()
    status, body = await run_db(request, pagerduty_views.enqueue, request.app, raw, request_info(request), clock.now())
    return JSONResponse(body, status_code=status)
