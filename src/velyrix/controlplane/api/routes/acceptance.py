"""``/v1/acceptance``: the public keys that sign the regions' acceptance reports (the reports themselves are
cluster routes: ``GET /v1/clusters/{id}/acceptance`` in ``routes/clusters.py``)."""

from __future__ import annotations

import base64

from fastapi import APIRouter, Depends, Path

from velyrix import catalog
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.reconcile import signing

router = APIRouter(tags=["acceptance"], responses=schemas.PROBLEM_RESPONSES)


@router.get("/v1/acceptance/keys/{region}", name="acceptance.key")
def signing_key(
    region: str = Path(json_schema_extra=schemas.one_of(catalog.region_names())),
    ctx: Ctx = Depends(require("regions:read")),
) -> dict[str, str]:
    """The Ed25519 public key that signs the region's acceptance reports (pin it when verifying)."""
    catalog.region(region)
    public = signing.public_key_b64(region)
    return {
        "region": region,
        "algorithm": "Ed25519",
        "public_key": public,
        "key_id": signing.key_id(base64.b64decode(public)),
    }
