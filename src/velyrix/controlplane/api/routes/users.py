"""``/v1/users``: the tenant's members (signed in through SSO or provisioned over SCIM), their roles and
second factors (``identity.members``); an owner changes a member's role (a step-up for a browser session)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.db.models.identity import User
from velyrix.controlplane.identity import members, mfa

router = APIRouter(prefix="/v1/users", tags=["identity"], responses=schemas.PROBLEM_RESPONSES)


class UserOut(BaseModel):
    id: str
    tenant_id: str
    user_name: str
    display_name: str
    role: str
    active: bool
    groups: list[str]
    provisioned_by: str = Field(description="sso (created at first sign-in) or scim")
    second_factors: list[str] = Field(description="webauthn, totp: the kinds the member has enrolled")
    security_keys: int
    created_at: dt.datetime
    updated_at: dt.datetime


class UserUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: str = Field(
        max_length=32,
        json_schema_extra=schemas.one_of(members.MEMBER_ROLES),
        description="the member's new role (until the identity provider maps another at its next sign-in)",
    )


@router.get("", name="users.list", response_model=schemas.Page[UserOut])
def list_users(
    ctx: Ctx = Depends(require("tenants:read")),
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    """The tenant's members, oldest first (provider keys: every tenant's)."""
    items, nxt = members.page(ctx.scope, cursor, limit)
    return {"items": items, "next_cursor": nxt}


@router.get("/{user_id}", name="users.get", response_model=UserOut)
def get_user(user_id: str, ctx: Ctx = Depends(require("tenants:read"))) -> dict[str, Any]:
    return members.out(ctx.scope, ctx.scope.get(User, user_id, "user"))


@router.patch("/{user_id}", name="users.update", response_model=UserOut)
def update_user(user_id: str, body: UserUpdate, ctx: Ctx = Depends(require("tenants:write"))) -> dict[str, Any]:
    """Change a member's role (owners; a browser session needs a fresh step-up). 409 when the tenant
    would be left without an active owner."""
    mfa.require_step_up(ctx.scope, "changing a member's role")
    data, before = members.set_role(ctx.scope, user_id, body.role)
    ctx.audit(f"users/{user_id}", detail={"role": body.role, "was": before})
    ctx.commit()
    return data
