"""``/v1/identity-policy``: the caller's tenant's MFA and session policy (whether a second factor is
required, whether TOTP counts as one, the step-up window, the session timeouts; seconds)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field

from velyrix import errors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.db import models
from velyrix.controlplane.identity import mfa

router = APIRouter(prefix="/v1/identity-policy", tags=["identity"], responses=schemas.PROBLEM_RESPONSES)


class PolicyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mfa_required: bool | None = Field(None, description="sessions change nothing until a second factor is proved")
    totp_allowed: bool | None = Field(None, description="TOTP codes count as a second factor (never for step-up)")
    step_up_s: int | None = Field(None, ge=30, le=3600, description="seconds a step-up assertion covers")
    idle_timeout_s: int | None = Field(None, ge=60, le=86400, description="session idle timeout, seconds")
    absolute_timeout_s: int | None = Field(None, ge=300, le=7 * 86400, description="session lifetime, seconds")


class PolicyOut(BaseModel):
    tenant_id: str | None = Field(description="null: the defaults of a tenant that set none (provider keys)")
    mfa_required: bool
    totp_allowed: bool
    step_up_s: int
    idle_timeout_s: int
    absolute_timeout_s: int


def _out(row: Any) -> dict[str, Any]:
    return {n: getattr(row, n) for n in PolicyOut.model_fields}


def _own_tenant(ctx: Ctx) -> str:
    if ctx.principal.tenant_id is None:
        raise errors.InvalidInputError("the identity policy belongs to a tenant", hint="use a key of the tenant")
    return ctx.principal.tenant_id


@router.get("", name="identity_policy.get", response_model=PolicyOut)
def get_policy(
    ctx: Ctx = Depends(require("tenants:read")),
    tenant_id: str | None = Query(None, max_length=32, description="provider keys: the tenant to read"),
) -> dict[str, Any]:
    """The tenant's policy (the defaults when none was set). Provider keys name the tenant, or read the
    defaults."""
    if ctx.principal.tenant_id is not None:
        if tenant_id not in (None, ctx.principal.tenant_id):
            raise errors.NotFoundError(kind="tenant", name=tenant_id)
        tenant_id = ctx.principal.tenant_id
    elif tenant_id is None:
        return {**_out(mfa.policy_of(ctx.scope, "")), "tenant_id": None}
    elif not ctx.scope.exists(models.Tenant, id=tenant_id):
        raise errors.NotFoundError(kind="tenant", name=tenant_id)
    return _out(mfa.policy_of(ctx.scope, tenant_id))


@router.put("", name="identity_policy.set", response_model=PolicyOut)
def set_policy(body: PolicyBody, ctx: Ctx = Depends(require("tenants:write"))) -> dict[str, Any]:
    """Set the fields given; the others keep their value."""
    tenant = _own_tenant(ctx)
    row = mfa.set_policy_of(ctx.scope, tenant, **body.model_dump())
    ctx.audit(f"tenants/{tenant}/identity-policy", detail=body.model_dump(exclude_none=True))
    ctx.commit()
    return _out(row)
