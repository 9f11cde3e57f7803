"""``/v1/nodes``: tenants see the nodes allocated to them; the provider's operators see and register
the fleet. State changes go through the fleet's ``transition()``, not through this API."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from velyrix import catalog, errors
from velyrix.controlplane.access import provider_actions
from velyrix.controlplane.api import idempotency, schemas
from velyrix.controlplane.api.context import Ctx, check_if_match, request_info, require, with_etag
from velyrix.controlplane.commands import Commands
from velyrix.controlplane.db import models

router = APIRouter(prefix="/v1/nodes", tags=["nodes"], responses=schemas.PROBLEM_RESPONSES)


class NodeCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]{0,127}$", description="hostname")
    region: str = Field(max_length=63, json_schema_extra=schemas.one_of(catalog.region_names()))
    node_type: str = Field(max_length=63, json_schema_extra=schemas.one_of(catalog.node_type_names()))
    hardware: dict[str, Any] = Field(
        default_factory=dict, description="inventory: serials, GPUs, NICs", json_schema_extra=schemas.JSON_OBJECT
    )
    labels: dict[str, str] = Field(default_factory=dict)


class NodeCreated(schemas.NodeOut):
    node_token: str = Field(
        description="the node agent's token (`vlxn_...`, scope nodes:report); shown once, "
        "never stored; rotate with POST /v1/nodes/{id}/credentials"
    )


class NodeUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hardware: dict[str, Any] | None = Field(None, json_schema_extra=schemas.JSON_OBJECT_OR_NULL)
    labels: dict[str, str] | None = None
    approval_id: str | None = Field(
        None, max_length=32, description="the tenant's approval (action labels) for a self-operated cluster's node"
    )
    break_glass_reason: str | None = Field(
        None, max_length=500, description="instead of an approval: what is wrong (audited, the tenant is told)"
    )


def out(n: Any) -> dict[str, Any]:  # an ORM entity or a row of Scope.read
    return {
        "id": n.id,
        "name": n.name,
        "region": n.region,
        "node_type": n.node_type,
        "tenant_id": n.tenant_id,
        "cluster_id": n.cluster_id,
        "provisioning_state": n.provisioning_state,
        "fleet_stage": n.fleet_stage,
        "hardware": n.hardware,
        "labels": n.labels,
        "last_error": n.last_error,
        "created_at": n.created_at,
        "updated_at": n.updated_at,
        "version": n.version,
    }


@router.get("", name="nodes.list", response_model=schemas.Page[schemas.NodeOut])
def list_nodes(
    ctx: Ctx = Depends(require("nodes:read")),
    region: str | None = None,
    node_type: str | None = None,
    cluster_id: str | None = None,
    provisioning_state: str | None = None,
    fleet_stage: str | None = None,
    name: str | None = Query(None, max_length=128, description="hostname"),
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    rows, nxt = ctx.scope.page(
        models.Node,
        filters={
            "region": region,
            "node_type": node_type,
            "cluster_id": cluster_id,
            "provisioning_state": provisioning_state,
            "fleet_stage": fleet_stage,
            "name": name,
        },
        cursor=cursor,
        limit=limit,
    )
    return {"items": [out(r) for r in rows], "next_cursor": nxt}


@router.post("", name="nodes.create", status_code=201, response_model=NodeCreated)
def register_node(
    body: NodeCreate,
    ctx: Ctx = Depends(require("fleet:operate")),
    idempotency_key: str | None = schemas.IDEMPOTENCY_KEY,
) -> Any:
    """Register a node of the fleet (free, ``enrolled``, stage ``burn-in``: intake inspects and burns it in
    through the driver before it is sold). The answer carries the node agent's token once (``node_token``)."""

    def make() -> tuple[dict[str, Any], int]:
        catalog.region(body.region)
        catalog.node_type(body.node_type)
        if ctx.scope.exists(models.Node, name=body.name):
            raise errors.ConflictError(f"node '{body.name}' is registered already")
        node = ctx.scope.add(
            models.Node(
                name=body.name, region=body.region, node_type=body.node_type, hardware=body.hardware, labels=body.labels
            )
        )
        _cred, token = Commands(ctx.scope).issue_node_token(node)
        ctx.audit(f"nodes/{node.id}", status_code=201, detail={"name": node.name})
        return {**out(node), "node_token": token}, 201

    return idempotency.create(ctx, idempotency_key, body, make, NodeCreated, secret_fields=("node_token",))


@router.get("/{node_id}", name="nodes.get", response_model=schemas.NodeOut)
async def get_node(node_id: str, ctx: Ctx = Depends(require("nodes:read", lazy=True))) -> Response:
    return await ctx.answer_row(schemas.NodeOut, models.Node, node_id, "node", out)


@router.patch("/{node_id}", name="nodes.update", response_model=schemas.NodeOut)
def update_node(
    node_id: str,
    body: NodeUpdate,
    request: Request,
    response: Response,
    ctx: Ctx = Depends(require("fleet:operate")),
    if_match: str | None = schemas.IF_MATCH,
) -> dict[str, Any]:
    """Replace a node's inventory or labels. On a self-operated cluster's node a provider key needs the
    tenant's approval or a break-glass (``controlplane/access/provider_actions.py``)."""
    node = ctx.scope.get(models.Node, node_id, "node")
    check_if_match(request, node)
    try:
        decision = provider_actions.gate_node(
            ctx.scope,
            request_info(request),
            ctx.principal,
            node,
            action="labels",
            approval_id=body.approval_id,
            break_glass_reason=body.break_glass_reason,
        )
    except errors.AccessError:
        request.state.audited = True  # the gate wrote and committed the refusal's audit event
        raise
    if body.hardware is not None:
        node.hardware = body.hardware
    if body.labels is not None:
        node.labels = body.labels
    ctx.scope.flush()
    if decision is None or decision.via == "managed":
        ctx.audit(f"nodes/{node.id}")
    else:
        ctx.audit(
            f"nodes/{node.id}",
            action="access.break_glass" if decision.via == "break_glass" else None,
            tenant_id=decision.tenant_id,
            detail={
                "action": "labels",
                "via": decision.via,
                "approval_id": decision.approval_id,
                "reason": decision.reason,
            },
        )
    ctx.commit()
    with_etag(response, node)
    return out(node)
