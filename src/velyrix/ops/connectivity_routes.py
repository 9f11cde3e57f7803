"""``/v1/clusters/{cluster_id}/connectivity``: a cluster's private links, BGP sessions and VPNs, declared
in HCL (the same resources ``velyrix plan`` reads: ``declarations.connectivity``), validated, planned
and priced (``planners.connectivity``). PUT replaces the cluster's set; 422 ``spec_invalid`` lists every
problem with line:column in the body's HCL. MD5 passwords are checked, never stored or shown."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.ops import connectivity_service

router = APIRouter(prefix="/v1/clusters", tags=["connectivity"], responses=schemas.PROBLEM_RESPONSES)


class ConnectivityBody(BaseModel):
    """Cross-field rules, checked on the HCL (422 ``spec_invalid``, one diagnostic each): every
    resource's ``cluster`` is this cluster's name; ASNs are RFC 6996 private, or public with an
    ``authorization`` (ROA) naming them as origin; each BYOIP prefix is covered by such a ROA within its
    ``max_length``, at most /24 (IPv4) or /48 (IPv6); no two prefixes overlap; one VLAN per link;
    ``port_speed_gbps`` and ``macsec`` as the cloud offers them; ``max_prefix`` >= the prefixes declared."""

    model_config = ConfigDict(extra="forbid")
    hcl: str = Field(
        max_length=65536,
        description='resource "velyrix_private_link", "velyrix_bgp_session" or "velyrix_vpn" blocks (docs/access.md)',
    )


class ConnectivityItem(BaseModel):
    address: str
    kind: str = Field(description="private_link, bgp_session, vpn or ddos_protection")
    summary: str
    cost: dict[str, Any] = Field(json_schema_extra=schemas.JSON_OBJECT)
    cloud_estimate: dict[str, Any] | None = Field(None, json_schema_extra=schemas.JSON_OBJECT_OR_NULL)


class ConnectivityOut(BaseModel):
    cluster_id: str
    items: list[ConnectivityItem]
    monthly_usd: float = Field(description="what Velyrix bills per month (USD)")
    cloud_estimate_monthly_usd: float = Field(description="the clouds' port-hours per month (USD), billed by them")


@router.put("/{cluster_id}/connectivity", name="connectivity.set", response_model=ConnectivityOut)
def set_connectivity(
    cluster_id: str, body: ConnectivityBody, ctx: Ctx = Depends(require("clusters:write"))
) -> dict[str, Any]:
    """Validate, plan and store the cluster's connectivity objects (replacing the previous set)."""
    answer = connectivity_service.put(ctx.scope, cluster_id, body.hcl)
    objects = sorted(item["address"] for item in answer["items"])
    ctx.audit(f"clusters/{cluster_id}/connectivity", detail={"objects": objects, "monthly_usd": answer["monthly_usd"]})
    ctx.commit()
    return answer


@router.get("/{cluster_id}/connectivity", name="connectivity.get", response_model=ConnectivityOut)
def get_connectivity(cluster_id: str, ctx: Ctx = Depends(require("clusters:read"))) -> dict[str, Any]:
    """The cluster's connectivity objects as planned and priced."""
    return connectivity_service.get(ctx.scope, cluster_id)
