"""``/v1/api-keys``: create (the secret is returned once), list, read, revoke. Keys are managed within
the caller's own tenancy and never exceed the rights of the key that creates or revokes them."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field

from velyrix import errors
from velyrix.controlplane.api import idempotency, schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.auth import roles
from velyrix.controlplane.db import models

router = APIRouter(prefix="/v1/api-keys", tags=["api-keys"], responses=schemas.PROBLEM_RESPONSES)


class ApiKeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    role: str = Field(
        max_length=32,
        description="owner, admin, member, viewer, billing; provider: operator, auditor",
        json_schema_extra=schemas.one_of(roles.ALL_ROLES),
    )
    scopes: list[Annotated[str, Field(json_schema_extra=schemas.one_of(roles.SCOPES))]] | None = Field(
        None, max_length=32, description="a subset of the role's scopes (default: all)"
    )
    expires_in_s: int | None = Field(None, ge=60, le=10 * 365 * 86400, description="lifetime in seconds")


def out(k: models.ApiKey) -> dict[str, Any]:
    return {
        "id": k.id,
        "tenant_id": k.tenant_id,
        "name": k.name,
        "role": k.role,
        "scopes": list(k.scopes),
        "prefix": k.prefix,
        "created_by_key_id": k.created_by_key_id,
        "created_at": k.created_at,
        "expires_at": k.expires_at,
        "revoked_at": k.revoked_at,
    }


@router.get("", name="api_keys.list", response_model=schemas.Page[schemas.ApiKeyOut])
def list_keys(
    ctx: Ctx = Depends(require("keys:read")),
    role: str | None = None,
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    rows, nxt = ctx.scope.page(models.ApiKey, filters={"role": role}, cursor=cursor, limit=limit)
    return {"items": [out(r) for r in rows], "next_cursor": nxt}


@router.post("", name="api_keys.create", status_code=201, response_model=schemas.ApiKeyCreated)
def create_key(
    body: ApiKeyCreate, ctx: Ctx = Depends(require("keys:admin")), idempotency_key: str | None = schemas.IDEMPOTENCY_KEY
) -> Any:
    def make() -> tuple[dict[str, Any], int]:
        expires = (models.utcnow() + dt.timedelta(seconds=body.expires_in_s)) if body.expires_in_s else None
        row, secret = ctx.scope.issue_key(name=body.name, role=body.role, scopes=body.scopes, expires_at=expires)
        ctx.audit(f"api-keys/{row.id}", status_code=201, detail={"role": row.role, "prefix": row.prefix})
        return {**out(row), "secret": secret}, 201

    return idempotency.create(ctx, idempotency_key, body, make, schemas.ApiKeyCreated, secret_fields=("secret",))


@router.get("/{key_id}", name="api_keys.get", response_model=schemas.ApiKeyOut)
def get_key(key_id: str, ctx: Ctx = Depends(require("keys:read"))) -> dict[str, Any]:
    return out(ctx.scope.get(models.ApiKey, key_id, "API key"))


@router.delete("/{key_id}", name="api_keys.revoke", response_model=schemas.ApiKeyOut)
def revoke_key(key_id: str, response: Response, ctx: Ctx = Depends(require("keys:admin"))) -> dict[str, Any]:
    """Revoke a key and every key it created (transitively): the next request made with any of them
    answers 401. Revoking twice is harmless."""
    row = ctx.scope.get(models.ApiKey, key_id, "API key")
    excess = sorted(set(row.scopes) - ctx.principal.scopes)
    if excess:
        raise errors.PermissionDeniedError(
            f"a key cannot revoke a key with more rights than its own (missing: {', '.join(excess)})", scope=excess[0]
        )
    revoked = ctx.scope.revoke_key(row)
    ctx.audit(f"api-keys/{row.id}", detail={"revoked": revoked})
    ctx.commit()
    return out(row)
