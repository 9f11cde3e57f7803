"""``/v1/volumes/{volume_id}/objects``: small objects on a volume, encrypted by the storage tier with the
volume's data key (the digital twin's tier, ``velyrix up``; 409 ``no_twin`` otherwise).

The data key is unwrapped by the tenant's own key under its grant for each request and handed to the tier
with it; it is never stored in clear nor returned. A read that the tenant's key refuses (destroyed,
revoked, grant withdrawn) answers the key's problem and leaves an audit event saying why; reads and writes
are audited like any mutation.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from velyrix import errors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.api.routes.sim import NoTwinError
from velyrix.controlplane.cmk import service
from velyrix.controlplane.db import models
from velyrix.fleet.drivers.sim import storage

RESPONSES = {**schemas.PROBLEM_RESPONSES, 502: {"description": "The tenant's key could not be reached"}}
router = APIRouter(prefix="/v1/volumes", tags=["volumes"], responses=RESPONSES)
NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


class ObjectWrite(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=NAME, description="object name on the volume")
    data_b64: str = Field(max_length=(storage.MAX_OBJECT_BYTES * 4) // 3 + 4, description="content, base64")


def _driver(request: Request) -> Any:
    runtime = getattr(request.app.state, "fleet", None)
    if runtime is None or runtime.sim is None:
        raise NoTwinError(hint="start the control plane with `velyrix up`: the twin's storage tier holds objects")
    return runtime.driver


def _key_refused(ctx: Ctx, volume: models.Volume, exc: errors.VelyrixError, name: str) -> None:
    """Record a read the tenant's key refused (``service.volume_key`` writes nothing, so only this is committed)."""
    detail = {"object": name, "code": exc.code, "reason": exc.message}
    ctx.audit(f"volumes/{volume.id}/objects", status_code=exc.http_status, outcome="refused", detail=detail)
    ctx.commit()


@router.put("/{volume_id}/objects", name="volume_data.write")
def write_object(
    volume_id: str, body: ObjectWrite, request: Request, ctx: Ctx = Depends(require("volumes:write"))
) -> dict[str, Any]:
    """Store an object (up to 1 MiB), encrypted with the volume's data key."""
    volume = ctx.scope.get(models.Volume, volume_id, "volume")
    driver = _driver(request)
    try:
        data = base64.b64decode(body.data_b64, validate=True)
    except (binascii.Error, ValueError):
        raise errors.InvalidInputError("data_b64 is not base64", hint="encode the content with base64") from None
    key, data_key = service.volume_key(ctx.scope, volume)
    stored = driver.write_object(volume.id, body.name, data, data_key)
    ctx.audit(f"volumes/{volume.id}/objects", detail={"object": body.name, "bytes": stored["bytes"], "key": key.id})
    ctx.commit()
    return {"volume_id": volume.id, "name": body.name, "customer_key_id": key.id, **stored}


@router.get("/{volume_id}/objects", name="volume_data.read")
def read_object(
    volume_id: str,
    request: Request,
    ctx: Ctx = Depends(require("volumes:read")),
    name: str | None = Query(None, pattern=NAME, description="the object to read (omitted: list the names)"),
) -> dict[str, Any]:
    """An object decrypted with the volume's data key, or (without ``name``) the names of the objects."""
    volume = ctx.scope.get(models.Volume, volume_id, "volume")
    driver = _driver(request)
    if name is None:
        return {"volume_id": volume.id, "names": driver.object_names(volume.id)}
    try:
        key, data_key = service.volume_key(ctx.scope, volume)
    except errors.VelyrixError as exc:
        _key_refused(ctx, volume, exc, name)
        raise
    data = driver.read_object(volume.id, name, data_key)
    ctx.audit(f"volumes/{volume.id}/objects", detail={"object": name, "bytes": len(data), "key": key.id})
    ctx.commit()
    return {
        "volume_id": volume.id,
        "name": name,
        "customer_key_id": key.id,
        "data_b64": base64.b64encode(data).decode(),
    }
