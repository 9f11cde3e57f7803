"""``/v1/tenants``: a tenant key sees its own tenant; the provider's operators create tenants."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from velyrix import errors
from velyrix.controlplane.api import idempotency, schemas
from velyrix.controlplane.api.context import Ctx, check_if_match, require, with_etag
from velyrix.controlplane.db import models

router = APIRouter(prefix="/v1/tenants", tags=["tenants"], responses=schemas.PROBLEM_RESPONSES)
NAME = r"^[a-z][a-z0-9-]{1,62}$"


class TenantCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=NAME, description="short unique name, e.g. acme")
    display_name: str = Field("", max_length=200)


class TenantUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    display_name: str = Field(max_length=200)


def out(t: models.Tenant) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "display_name": t.display_name,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
        "version": t.version,
    }


@router.get("", name="tenants.list", response_model=schemas.Page[schemas.TenantOut])
def list_tenants(
    ctx: Ctx = Depends(require("tenants:read")),
    name: str | None = None,
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    rows, nxt = ctx.scope.page(models.Tenant, filters={"name": name}, cursor=cursor, limit=limit)
    return {"items": [out(r) for r in rows], "next_cursor": nxt}


@router.post("", name="tenants.create", status_code=201, response_model=schemas.TenantOut)
def create_tenant(
    body: TenantCreate,
    request: Request,
    ctx: Ctx = Depends(require("tenants:admin")),
    idempotency_key: str | None = schemas.IDEMPOTENCY_KEY,
) -> Any:
    def make() -> tuple[dict[str, Any], int]:
        if ctx.scope.exists(models.Tenant, name=body.name):
            raise errors.ConflictError(f"tenant name '{body.name}' is taken", hint="choose another name")
        tenant = ctx.scope.add(models.Tenant(name=body.name, display_name=body.display_name))
        ctx.audit(f"tenants/{tenant.id}", status_code=201, tenant_id=tenant.id)
        return out(tenant), 201

    return idempotency.create(ctx, idempotency_key, body, make, schemas.TenantOut)


@router.get("/{tenant_id}", name="tenants.get", response_model=schemas.TenantOut)
def get_tenant(tenant_id: str, response: Response, ctx: Ctx = Depends(require("tenants:read"))) -> dict[str, Any]:
    tenant = ctx.scope.get(models.Tenant, tenant_id, "tenant")
    with_etag(response, tenant)
    return out(tenant)


@router.patch("/{tenant_id}", name="tenants.update", response_model=schemas.TenantOut)
def update_tenant(
    tenant_id: str,
    body: TenantUpdate,
    request: Request,
    response: Response,
    ctx: Ctx = Depends(require("tenants:write")),
    if_match: str | None = schemas.IF_MATCH,
) -> dict[str, Any]:
    tenant = ctx.scope.get(models.Tenant, tenant_id, "tenant")
    check_if_match(request, tenant)
    tenant.display_name = body.display_name
    ctx.scope.flush()
    ctx.audit(f"tenants/{tenant.id}")
    ctx.commit()
    with_etag(response, tenant)
    return out(tenant)
