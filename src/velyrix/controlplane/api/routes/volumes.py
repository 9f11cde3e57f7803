"""``/v1/volumes``: storage per tier whose lifecycle is independent of clusters; ``forbid_deletion``
protects a volume until it is turned off."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from velyrix import catalog, errors
from velyrix.controlplane.api import idempotency, schemas
from velyrix.controlplane.api.context import Ctx, check_if_match, require, with_etag
from velyrix.controlplane.cmk import service as cmk_service
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.keys import CustomerKey
from velyrix.controlplane.identity import mfa

router = APIRouter(prefix="/v1/volumes", tags=["volumes"], responses=schemas.PROBLEM_RESPONSES)
MAX_TB = 1_000_000.0


class DeletionForbiddenError(errors.ConflictError):
    code = "deletion_forbidden"
    template = "volume '{name}' has forbid_deletion set"


class VolumeCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")
    region: str = Field(max_length=63, json_schema_extra=schemas.one_of(catalog.region_names()))
    tier: str = Field(
        max_length=63,
        description="a storage tier of the catalog",
        json_schema_extra=schemas.one_of(catalog.storage_tier_names()),
    )
    size_tb: float = Field(gt=0, le=MAX_TB, description="decimal TB")
    forbid_deletion: bool = False
    cluster_id: str | None = Field(None, max_length=32, description="mount on this cluster")
    cmk_id: str | None = Field(
        None, max_length=32, description="customer key (cmk_...) that wraps the volume's own AES-256-GCM data key"
    )


class VolumeUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size_tb: float | None = Field(None, gt=0, le=MAX_TB, description="grow only")
    forbid_deletion: bool | None = None
    cluster_id: str | None = Field(None, max_length=32, description="mount on this cluster ('' detaches)")


def out(v: Any) -> dict[str, Any]:  # an ORM entity or a row of Scope.read
    return {
        "id": v.id,
        "tenant_id": v.tenant_id,
        "name": v.name,
        "region": v.region,
        "tier": v.tier,
        "size_tb": v.size_tb,
        "forbid_deletion": v.forbid_deletion,
        "cluster_id": v.cluster_id,
        "state": v.state,
        "created_at": v.created_at,
        "updated_at": v.updated_at,
        "version": v.version,
    }


def _mountable(ctx: Ctx, cluster_id: str, region: str) -> str:
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    if cluster.region != region:
        raise errors.InvalidInputError(
            f"cluster '{cluster.name}' is in {cluster.region}, the volume in {region}",
            hint="a volume mounts only on clusters of its region",
        )
    return cluster.id


@router.get("", name="volumes.list", response_model=schemas.Page[schemas.VolumeOut])
def list_volumes(
    ctx: Ctx = Depends(require("volumes:read")),
    region: str | None = None,
    tier: str | None = None,
    cluster_id: str | None = None,
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    rows, nxt = ctx.scope.page(
        models.Volume, filters={"region": region, "tier": tier, "cluster_id": cluster_id}, cursor=cursor, limit=limit
    )
    return {"items": [out(r) for r in rows], "next_cursor": nxt}


@router.post("", name="volumes.create", status_code=201, response_model=schemas.VolumeOut)
def create_volume(
    body: VolumeCreate,
    ctx: Ctx = Depends(require("volumes:write")),
    idempotency_key: str | None = schemas.IDEMPOTENCY_KEY,
) -> Any:
    def make() -> tuple[dict[str, Any], int]:
        catalog.region(body.region)
        if body.tier not in catalog.storage_tier_names():
            raise errors.UnknownNameError("storage tier", body.tier, catalog.storage_tier_names())
        if ctx.scope.exists(models.Volume, name=body.name):
            raise errors.ConflictError(f"a volume named '{body.name}' exists in this tenant")
        cluster_id = _mountable(ctx, body.cluster_id, body.region) if body.cluster_id else None
        volume = models.Volume(
            name=body.name,
            region=body.region,
            tier=body.tier,
            size_tb=body.size_tb,
            forbid_deletion=body.forbid_deletion,
            cluster_id=cluster_id,
        )
        data_key = None
        if body.cmk_id:  # the tenant's key wraps the volume's data key before anything is written
            key = ctx.scope.get(CustomerKey, body.cmk_id, "customer key")
            data_key = cmk_service.new_volume_key(ctx.scope, key, key.tenant_id, volume.id)
        ctx.scope.add(volume)
        detail: dict[str, Any] = {"tier": volume.tier, "size_tb": volume.size_tb}
        if data_key is not None:
            ctx.scope.add(data_key)
            detail["customer_key_id"] = data_key.key_id
        ctx.audit(f"volumes/{volume.id}", status_code=201, detail=detail)
        return out(volume), 201

    return idempotency.create(ctx, idempotency_key, body, make, schemas.VolumeOut)


@router.get("/{volume_id}", name="volumes.get", response_model=schemas.VolumeOut)
async def get_volume(volume_id: str, ctx: Ctx = Depends(require("volumes:read", lazy=True))) -> Response:
    return await ctx.answer_row(schemas.VolumeOut, models.Volume, volume_id, "volume", out)


@router.patch("/{volume_id}", name="volumes.update", response_model=schemas.VolumeOut)
def update_volume(
    volume_id: str,
    body: VolumeUpdate,
    request: Request,
    response: Response,
    ctx: Ctx = Depends(require("volumes:write")),
    if_match: str | None = schemas.IF_MATCH,
) -> dict[str, Any]:
    volume = ctx.scope.get(models.Volume, volume_id, "volume")
    check_if_match(request, volume)
    if body.size_tb is not None:
        if body.size_tb < volume.size_tb:
            raise errors.InvalidInputError(
                f"size_tb can only grow (now {volume.size_tb} TB)", hint="create a smaller volume and copy the data"
            )
        volume.size_tb = body.size_tb
    if body.forbid_deletion is not None:
        volume.forbid_deletion = body.forbid_deletion
    if body.cluster_id is not None:
        volume.cluster_id = _mountable(ctx, body.cluster_id, volume.region) if body.cluster_id else None
    ctx.scope.flush()
    ctx.audit(f"volumes/{volume.id}")
    ctx.commit()
    with_etag(response, volume)
    return out(volume)


@router.delete("/{volume_id}", name="volumes.delete", status_code=204, response_class=Response)
def delete_volume(
    volume_id: str,
    request: Request,
    ctx: Ctx = Depends(require("volumes:write")),
    if_match: str | None = schemas.IF_MATCH,
) -> Response:
    """Delete a volume and its data; refused (409 ``deletion_forbidden``) while forbid_deletion is set."""
    mfa.require_step_up(ctx.scope, "deleting a volume")
    volume = ctx.scope.get(models.Volume, volume_id, "volume")
    check_if_match(request, volume)
    if volume.forbid_deletion:
        raise DeletionForbiddenError(name=volume.name, hint="PATCH forbid_deletion=false first")
    ctx.audit(f"volumes/{volume.id}", status_code=204)
    cmk_service.forget_volume(ctx.scope, volume.id)  # its data key gone: a cryptographic erase
    ctx.scope.delete(volume)
    ctx.commit()
    return Response(status_code=204)
