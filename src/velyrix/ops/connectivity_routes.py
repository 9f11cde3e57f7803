"""``/v1/clusters/{cluster_id}/connectivity``: a cluster's private links, BGP sessions and VPNs, declared
in HCL (the same resources ``velyrix plan`` reads: ``declarations.connectivity``), validated, planned
and priced (``planners.connectivity``). PUT replaces the cluster's set; 422 ``spec_invalid`` lists every
problem with line:column in the body's HCL. MD5 passwords are checked, never stored or shown."""

from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import access as tables
from velyrix.declarations import connectivity
from velyrix.declarations import connectivity_specs as specs
from velyrix.planners import connectivity as planner

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


def _stored_spec(obj: Any) -> dict[str, Any]:
    spec = dataclasses.asdict(obj)
    if "peering" in spec:
        spec["peering"].pop("md5_password", None)
    spec.pop("position", None)
    return spec


def _answer(cluster_id: str, rows: list[tables.ConnectivityObject]) -> dict[str, Any]:
    items = [row.plan for row in rows]
    return {
        "cluster_id": cluster_id,
        "items": items,
        "monthly_usd": round(sum(i["cost"]["monthly_usd"] for i in items), 2),
        "cloud_estimate_monthly_usd": round(
            sum(i["cloud_estimate"]["monthly_usd"] for i in items if i.get("cloud_estimate")), 2
        ),
    }


def _rows(ctx: Ctx, cluster_id: str) -> list[tables.ConnectivityObject]:
    q = sa.select(tables.ConnectivityObject).where(tables.ConnectivityObject.cluster_id == cluster_id)
    return list(ctx.scope.session.scalars(q.order_by(tables.ConnectivityObject.address)))


@router.put("/{cluster_id}/connectivity", name="connectivity.set", response_model=ConnectivityOut)
def set_connectivity(
    cluster_id: str, body: ConnectivityBody, ctx: Ctx = Depends(require("clusters:write"))
) -> dict[str, Any]:
    """Validate, plan and store the cluster's connectivity objects (replacing the previous set)."""
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    conn = connectivity.loads(body.hcl, "request body", known_clusters=[cluster.name])
    planned = {item["address"]: item for item in planner.plan(conn)["items"]}
    objects: list[specs.PrivateLink | specs.BgpSession | specs.Vpn] = [
        *conn.private_links,
        *conn.bgp_sessions,
        *conn.vpns,
    ]
    for row in _rows(ctx, cluster.id):
        ctx.scope.session.delete(row)
    ctx.scope.session.flush()
    kinds = {specs.PrivateLink: "private_link", specs.BgpSession: "bgp_session", specs.Vpn: "vpn"}
    for obj in objects:
        ctx.scope.session.add(
            tables.ConnectivityObject(
                tenant_id=cluster.tenant_id,
                cluster_id=cluster.id,
                address=obj.address,
                kind=kinds[type(obj)],
                spec=_stored_spec(obj),
                plan=planned[obj.address],
            )
        )
    for address, item in planned.items():
        if item["kind"] == "ddos_protection":
            ctx.scope.session.add(
                tables.ConnectivityObject(
                    tenant_id=cluster.tenant_id,
                    cluster_id=cluster.id,
                    address=address,
                    kind="ddos_protection",
                    spec={},
                    plan=item,
                )
            )
    ctx.scope.session.flush()
    answer = _answer(cluster.id, _rows(ctx, cluster.id))
    ctx.audit(
        f"clusters/{cluster.id}/connectivity", detail={"objects": sorted(planned), "monthly_usd": answer["monthly_usd"]}
    )
    ctx.commit()
    return answer


@router.get("/{cluster_id}/connectivity", name="connectivity.get", response_model=ConnectivityOut)
def get_connectivity(cluster_id: str, ctx: Ctx = Depends(require("clusters:read"))) -> dict[str, Any]:
    """The cluster's connectivity objects as planned and priced."""
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    return _answer(cluster.id, _rows(ctx, cluster.id))
