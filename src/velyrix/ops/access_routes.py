"""``/v1/ssh-certificates``, ``/v1/clusters/{id}/access-approvals`` and
``/v1/nodes/{id}/operator-certificates``: a tenant's users get short-lived SSH certificates for their
cluster's nodes (root only on a self-operated cluster, ``controlplane.access.modes``); a tenant approves
a provider action; the provider's operators get a certificate to a node after the gate
(``controlplane.access.approvals``), and a break-glass opens a NOC incident the tenant sees."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, model_validator

from velyrix import errors
from velyrix.controlplane.access import approvals, certificates, ssh_ca
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, request_info, require
from velyrix.ops import access_service

router = APIRouter(prefix="/v1", tags=["access"], responses=schemas.PROBLEM_RESPONSES)

_PUBLIC_KEY = Field(
    min_length=16,
    max_length=16384,
    pattern=r"^(ssh-ed25519|ecdsa-sha2-nistp256|ecdsa-sha2-nistp384|ssh-rsa) [A-Za-z0-9+/=]+( [^\n]*)?$",
    description="one OpenSSH public key line, e.g. the contents of ~/.ssh/id_ed25519.pub",
)


class CertificateRequest(BaseModel):
    """A user's certificate for the nodes of one cluster. Cross-field rule: ``root`` = true is granted
    only when the cluster's ``operating_mode`` is ``self_operated`` and both the user's role and the
    caller's role are ``owner`` or ``admin``; otherwise 403 ``access_tenant_root_refused``."""

    model_config = ConfigDict(extra="forbid")
    cluster_id: str = Field(min_length=1, max_length=32)
    user_id: str = Field(min_length=1, max_length=32, description="the tenant's user the certificate is for")
    public_key: str = _PUBLIC_KEY
    root: bool = Field(False, description="the root login (self_operated clusters, owners and admins only)")
    valid_for_s: int = Field(ssh_ca.DEFAULT_VALIDITY_S, ge=60, le=ssh_ca.MAX_VALIDITY_S)


class CertificateOut(BaseModel):
    certificate: str = Field(description="OpenSSH certificate line (save as ~/.ssh/id_ed25519-cert.pub)")
    serial: int
    key_id: str
    principals: list[str]
    expires_at: dt.datetime
    authority: str = Field(description="the public key of the CA that signed it")


class ApprovalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: str = Field(json_schema_extra=schemas.one_of(approvals.ACTIONS))
    valid_for_s: int = Field(3600, ge=60, le=approvals.MAX_APPROVAL_S)
    reason: str = Field("", max_length=500)


class ApprovalOut(BaseModel):
    id: str
    cluster_id: str
    action: str
    approved_by: str
    expires_at: dt.datetime


class OperatorCertificateRequest(BaseModel):
    """An operator's certificate to one node. Cross-field rule: on a node of a ``self_operated``
    cluster exactly one of ``approval_id`` (the tenant's approval of action ``ssh``) and
    ``break_glass_reason`` is needed (otherwise 403 ``access_approval_required``); both at once is 422."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "not": {
                "required": ["approval_id", "break_glass_reason"],
                "properties": {"approval_id": {"type": "string"}, "break_glass_reason": {"type": "string"}},
            }
        },
    )
    public_key: str = _PUBLIC_KEY
    approval_id: str | None = Field(None, min_length=1, max_length=32)
    break_glass_reason: str | None = Field(
        None,
        max_length=500,
        pattern=r"(\S\s*){" + str(approvals.MIN_REASON_CHARS) + "}",
        description=f"why the glass is broken: at least {approvals.MIN_REASON_CHARS} non-space characters",
    )
    valid_for_s: int = Field(900, ge=60, le=certificates.OPERATOR_MAX_S)

    @model_validator(mode="after")
    def _one_way_in(self) -> OperatorCertificateRequest:
        if self.approval_id is not None and self.break_glass_reason is not None:
            raise ValueError("give approval_id or break_glass_reason, not both")
        return self


class OperatorCertificateOut(CertificateOut):
    via: str = Field(description="managed, approval or break_glass")
    incident: str | None = Field(description="the NOC incident that tells the tenant of a break-glass")


@contextlib.contextmanager
def _refusals_audited(ctx: Ctx) -> Iterator[None]:
    """An ``AccessError``'s audit event was written and committed by ``controlplane.access`` itself."""
    try:
        yield
    except errors.AccessError:
        ctx.request.state.audited = True
        raise


@router.post("/ssh-certificates", name="ssh_certificates.create", response_model=CertificateOut, status_code=201)
def create_certificate(body: CertificateRequest, ctx: Ctx = Depends(require("access:certify"))) -> dict[str, Any]:
    """Register ``public_key`` for the user (idempotent) and sign it for the cluster's nodes."""
    with _refusals_audited(ctx):
        answer = access_service.user_certificate(ctx.scope, request_info(ctx.request), **body.model_dump())
    ctx.commit()
    return answer


@router.post(
    "/clusters/{cluster_id}/access-approvals",
    name="access_approvals.create",
    response_model=ApprovalOut,
    status_code=201,
)
def create_approval(
    cluster_id: str, body: ApprovalRequest, ctx: Ctx = Depends(require("access:approve"))
) -> dict[str, Any]:
    """The tenant approves one provider action on its cluster's nodes (single use, until it expires)."""
    answer = access_service.approval(ctx.scope, request_info(ctx.request), cluster_id, **body.model_dump())
    ctx.commit()
    return answer


@router.post(
    "/nodes/{node_id}/operator-certificates",
    name="operator_certificates.create",
    response_model=OperatorCertificateOut,
    status_code=201,
)
def create_operator_certificate(
    node_id: str, body: OperatorCertificateRequest, ctx: Ctx = Depends(require("fleet:operate"))
) -> dict[str, Any]:
    """An operator's certificate to a node; on a self-operated cluster only with the tenant's approval
    or a break-glass (audited; the tenant is told through a NOC incident)."""
    with _refusals_audited(ctx):
        answer = access_service.operator_certificate(ctx.scope, request_info(ctx.request), node_id, **body.model_dump())
    ctx.commit()
    return answer
