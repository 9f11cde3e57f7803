"""``POST /v1/nodes/{id}/actions``: a provider operator orders a drain or a reboot of a node, or releases a
quarantined node to production or sends it to RMA (``ops/node_stage.py``: the server decides on the node's
health evidence; these stage moves do not enter the node, so no tenant approval gates them).

On a self-operated cluster's node the order needs the tenant's approval of that action or a break-glass
with a reason (``controlplane/access/provider_actions.py``; refused: 403 ``access_approval_required``,
audited); a break-glass also opens a NOC incident of the tenant's cluster (``access_service``). A drain
is a Warning event of the node's cluster naming the operator and the reason (the cluster's scheduler
follows its events: ``ops/remediation/node_reports.py`` ``ClusterEventSeam``); a reboot goes to the fleet
driver (409 ``conflict`` on a control plane that drives no fleet). One audit event per order.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, model_validator

from velyrix import errors
from velyrix.controlplane import status
from velyrix.controlplane.access import approvals, provider_actions
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, request_info, require
from velyrix.controlplane.db import models
from velyrix.ops import access_service, node_stage

router = APIRouter(prefix="/v1/nodes", tags=["access"], responses=schemas.PROBLEM_RESPONSES)


class NodeActionRequest(BaseModel):
    """A provider's drain, reboot, release or RMA. Cross-field rules: ``approval_id`` and
    ``break_glass_reason`` are not given together (422); on a self-operated cluster's node a drain or reboot
    needs one of them (else 403); ``override`` is true only for a release (422)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "allOf": [
                {
                    "not": {
                        "required": ["approval_id", "break_glass_reason"],
                        "properties": {"approval_id": {"type": "string"}, "break_glass_reason": {"type": "string"}},
                    }
                },
                {
                    "not": {
                        "required": ["action", "override"],
                        "properties": {"action": {"enum": ["drain", "reboot", "rma"]}, "override": {"const": True}},
                    }
                },
            ]
        },
    )
    action: Literal["drain", "reboot", "release", "rma"]
    reason: str = Field(min_length=1, max_length=500, description="why (the cluster's event shows it)")
    approval_id: str | None = Field(None, min_length=1, max_length=32)
    break_glass_reason: str | None = Field(
        None,
        max_length=500,
        pattern=r"(\S\s*){" + str(approvals.MIN_REASON_CHARS) + "}",
        description=f"why the glass is broken: at least {approvals.MIN_REASON_CHARS} non-space characters",
    )
    override: bool = Field(
        False,
        description="release: release a node whose health evidence is not clean now (else 409"
        " node_health_not_clean); the reason and the evidence are recorded",
    )

    @model_validator(mode="after")
    def _one_way_in(self) -> NodeActionRequest:
        if self.approval_id is not None and self.break_glass_reason is not None:
            raise ValueError("give approval_id or break_glass_reason, not both")
        if self.override and self.action != "release":
            raise ValueError("override is for a release only")
        return self


class NodeActionOut(BaseModel):
    node_id: str
    action: str
    via: str = Field(description="provider (no cluster, or a managed one), approval or break_glass")
    operation: str | None = Field(
        description="the fleet driver's operation id of a reboot; the RMA record's id of an rma"
    )
    incident: str | None = Field(description="the NOC incident that tells the tenant of a break-glass")


def _reboot(ctx: Ctx, node: models.Node) -> str:
    fleet = getattr(ctx.request.app.state, "fleet", None)
    if fleet is None:
        raise errors.ConflictError(
            "this control plane drives no fleet: nothing to reboot", hint="velyrix up, or a server with a driver"
        )
    return str(fleet.driver.reboot(node.name, request_id=request_info(ctx.request).request_id).id)


def _stage(ctx: Ctx, node: models.Node, body: NodeActionRequest) -> dict[str, Any]:
    """A release or RMA (``node_stage``), audited with the evidence the server decided on."""
    actor = f"user:{ctx.principal.name}"
    before = node.fleet_stage
    record = None
    if body.action == "release":
        found = node_stage.release(ctx.scope, node, actor=actor, reason=body.reason, override=body.override)
    else:
        found = node_stage.evidence(ctx.scope, node)
        record = node_stage.send_to_rma(ctx.scope, node, actor=actor, reason=body.reason)
    ctx.audit(
        f"nodes/{node.id}/actions",
        detail={
            "action": body.action,
            "reason": body.reason,
            "from_stage": before,
            "to_stage": node.fleet_stage,
            "evidence": found.summary,
            "clean": found.clean,
            "override": body.override,
            "rma_record": record,
        },
    )
    ctx.commit()
    return {"node_id": node.id, "action": body.action, "via": "provider", "operation": record, "incident": None}


@router.post("/{node_id}/actions", name="nodes.act", response_model=NodeActionOut)
def act(node_id: str, body: NodeActionRequest, ctx: Ctx = Depends(require("fleet:operate"))) -> dict[str, Any]:
    """Drain or reboot a node; on a self-operated cluster's node only with the tenant's approval or a
    break-glass (audited; the tenant is told through a NOC incident and its cluster's events)."""
    node = ctx.scope.get(models.Node, node_id, "node")
    if body.action in ("release", "rma"):
        return _stage(ctx, node, body)
    info = request_info(ctx.request)
    try:
        decision = provider_actions.gate_node(
            ctx.scope,
            info,
            ctx.principal,
            node,
            action=body.action,
            approval_id=body.approval_id,
            break_glass_reason=body.break_glass_reason,
        )
    except errors.AccessError:
        ctx.request.state.audited = True  # the gate wrote and committed the refusal's audit event
        raise
    via = decision.via if decision is not None and decision.via != "managed" else "provider"
    cluster = provider_actions.cluster_of(ctx.scope, node)
    operation = None
    if body.action == "reboot":
        operation = _reboot(ctx, node)
    elif cluster is not None:
        status.add_event(
            cluster, "ProviderDrain", f"{node.name} drained by {ctx.principal.name}: {body.reason}", "Warning"
        )
    incident = None
    if decision is not None and decision.via == "break_glass" and cluster is not None:
        incident = access_service.notify_break_glass(ctx.scope, info, cluster, node, decision.reason)
    ctx.audit(
        f"nodes/{node.id}/actions",
        action="access.break_glass" if via == "break_glass" else None,
        tenant_id=cluster.tenant_id if cluster is not None else None,
        detail={
            "action": body.action,
            "reason": body.reason,
            "via": via,
            "approval_id": decision.approval_id if decision else None,
            "break_glass_reason": decision.reason if decision else "",
            "operation": operation,
        },
    )
    ctx.commit()
    return {"node_id": node.id, "action": body.action, "via": via, "operation": operation, "incident": incident}
