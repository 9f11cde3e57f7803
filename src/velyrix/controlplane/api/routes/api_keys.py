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
from velyrix.controlplane.commands import Commands
from velyrix.controlplane.db import models
from velyrix.controlplane.identity import keyuse, mfa

router = APIRouter(prefix="/v1/api-keys", tags=["api-keys"], responses=schemas.PROBLEM_RESPONSES)


class ApiKeyCreate(BaseModel):
    # per role, the scopes it may be given (Commands.issue_key refuses others)
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=schemas.variants(
            "role",
            {
                role: {"scopes": {"anyOf": [{"type": "array", "items": {"enum": sorted(s)}}, {"type": "null"}]}}
                for role, s in roles.ALL_ROLES.items()
            },
        ),
    )
    name: str = Field(min_length=1, max_length=200)
    role: str = Field(
        max_length=32,
        description="owner, admin, member, viewer, billing; provider: operator, auditor, physical-access",
        json_schema_extra=schemas.one_of(roles.ALL_ROLES),
    )
    scopes: list[Annotated[str, Field(json_schema_extra=schemas.one_of(roles.SCOPES))]] | None = Field(
        None, max_length=32, description="a subset of the role's scopes (default: all)"
    )
    expires_in_s: int | None = Field(None, ge=60, le=10 * 365 * 86400, description="lifetime in seconds")
    description: str = Field("", max_length=500, description="what the key is for (shown by `velyrix keys list`)")


class ApiKeyRotate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    grace_s: int = Field(0, ge=0, le=86400, description="seconds the old key keeps working (default: none)")


def out(k: models.ApiKey, details: dict[str, Any] | None = None) -> dict[str, Any]:
    d = details or {}
    return {
        "description": d.get("description", ""),
        "last_used_at": d.get("last_used_at"),
        "last_used_address": d.get("last_used_address"),
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
    found = keyuse.details(ctx.scope, [r.id for r in rows])
    return {"items": [out(r, found.get(r.id)) for r in rows], "next_cursor": nxt}


@router.post("", name="api_keys.create", status_code=201, response_model=schemas.ApiKeyCreated)
def create_key(
    body: ApiKeyCreate, ctx: Ctx = Depends(require("keys:admin")), idempotency_key: str | None = schemas.IDEMPOTENCY_KEY
) -> Any:
    if body.role == "owner":
        mfa.require_step_up(ctx.scope, "creating an owner key")

    def make() -> tuple[dict[str, Any], int]:
        expires = (models.utcnow() + dt.timedelta(seconds=body.expires_in_s)) if body.expires_in_s else None
        row, secret = Commands(ctx.scope).issue_key(
            name=body.name, role=body.role, scopes=body.scopes, expires_at=expires
        )
        keyuse.set_details(
            ctx.scope,
            row.id,
            description=body.description,
            user_id=ctx.principal.user_id,
            creator_key_id=ctx.principal.key_id,
        )
        ctx.audit(f"api-keys/{row.id}", status_code=201, detail={"role": row.role, "prefix": row.prefix})
        return {**out(row, {"description": body.description}), "secret": secret}, 201

    return idempotency.create(ctx, idempotency_key, body, make, schemas.ApiKeyCreated, secret_fields=("secret",))


@router.get("/{key_id}", name="api_keys.get", response_model=schemas.ApiKeyOut)
def get_key(key_id: str, ctx: Ctx = Depends(require("keys:read"))) -> dict[str, Any]:
    row = ctx.scope.get(models.ApiKey, key_id, "API key")
    return out(row, keyuse.details(ctx.scope, [row.id]).get(row.id))


@router.delete("/{key_id}", name="api_keys.revoke", response_model=schemas.ApiKeyOut)
def revoke_key(key_id: str, response: Response, ctx: Ctx = Depends(require("keys:admin"))) -> dict[str, Any]:
    """Revoke a key and every key it created (transitively): the next request made with any of them
    answers 401. Revoking twice is harmless."""
    row = _within_rights(ctx, key_id, "revoke")
    revoked = Commands(ctx.scope).revoke_key(row)
    ctx.audit(f"api-keys/{row.id}", detail={"revoked": revoked})
    ctx.commit()
    return out(row, keyuse.details(ctx.scope, [row.id]).get(row.id))


def _within_rights(ctx: Ctx, key_id: str, verb: str) -> models.ApiKey:
    """The caller's key ``key_id``; 403 when it has rights the caller lacks."""
    row = ctx.scope.get(models.ApiKey, key_id, "API key")
    excess = sorted(set(row.scopes) - ctx.principal.scopes)
    if excess:
        raise errors.PermissionDeniedError(
            f"a key cannot {verb} a key with more rights than its own (missing: {', '.join(excess)})", scope=excess[0]
        )
    return row


@router.post("/{key_id}/rotate", name="api_keys.rotate", status_code=201, response_model=schemas.ApiKeyCreated)
def rotate_key(key_id: str, body: ApiKeyRotate | None = None, ctx: Ctx = Depends(require("keys:admin"))) -> Any:
    """A new key with the old one's name, role, scopes, description and expiry; the old key stops working
    now (or after ``grace_s``). A revoked key cannot be rotated (409)."""
    old = _within_rights(ctx, key_id, "rotate")
    now = models.utcnow()
    if old.revoked_at is not None or (old.expires_at is not None and old.expires_at <= now):
        raise errors.ConflictError(f"API key {old.id} is revoked or expired", hint="create a new key instead")
    found = keyuse.details(ctx.scope, [old.id]).get(old.id, {})
    row, secret = Commands(ctx.scope).issue_key(
        name=old.name, role=old.role, scopes=old.scopes, expires_at=old.expires_at
    )
    description = found.get("description", "")
    keyuse.set_details(ctx.scope, row.id, description=description, user_id=found.get("user_id"))
    grace = body.grace_s if body is not None else 0
    if grace:
        old.expires_at = min(old.expires_at or now + dt.timedelta(seconds=grace), now + dt.timedelta(seconds=grace))
    else:
        old.revoked_at = now
    ctx.audit(f"api-keys/{old.id}", status_code=201, detail={"new_key_id": row.id, "grace_s": grace})
    ctx.commit()
    return {**out(row, {"description": description}), "secret": secret}
