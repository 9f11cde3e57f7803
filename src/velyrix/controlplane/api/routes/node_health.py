"""Node agents and node health: agents report to ``POST /v1/nodes/{hostname}/reports`` with their node
token (``vlxn_``, scope ``nodes:report``); operators rotate a node's token; the last report of a node,
RMA records are readable (NOC incidents: ``velyrix.ops.noc.routes``) (see ``velyrix.controlplane.node_health``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from velyrix import errors
from velyrix.controlplane import node_health
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.commands import Commands
from velyrix.controlplane.db import health_tables, models
from velyrix.controlplane.db.models import cloud as models_cloud

router = APIRouter(tags=["node health"], responses=schemas.PROBLEM_RESPONSES)

HOSTNAME = r"^[a-z0-9][a-z0-9.-]{0,127}$"


class ReportBody(BaseModel):
    """What ``velyrix.agent.reporting.Reporter`` sends (docs/telemetry.md)."""

    model_config = ConfigDict(extra="forbid")
    hostname: str = Field(pattern=HOSTNAME, description="must equal the path's hostname")
    collected_at_s: float = Field(ge=0.0, description="when the sample was collected (Unix s; twin: sim s)")
    up: bool = True
    problems: list[str] = Field(default_factory=list, max_length=200)
    sample: dict[str, Any] = Field(
        default_factory=dict,
        description="NodeSample.to_dict(): the evidence (GPU counters, XID events with their times, IB ports, "
        "NVMe); the control plane judges it itself",
        json_schema_extra=schemas.JSON_OBJECT,
    )
    verdict: dict[str, Any] | None = Field(
        None,
        description="the agent's whole verdict (node, level, action, lemon_score, reasons with key, source, "
        "message, level, action, hardware): a claim the control plane records and compares, never obeys",
        json_schema_extra=schemas.JSON_OBJECT_OR_NULL,
    )


class ReportOut(BaseModel):
    node_id: str
    hostname: str
    received_at: dt.datetime
    collected_at_s: float
    up: bool
    problems: list[str]
    health_level: int | None
    health_action: str | None = Field(description="ladder rung name: IGNORE ... DRAIN_NOW, QUARANTINE, RMA")
    health_summary: str
    actions: list[str] = Field(
        description="what the control plane did about the last report that changed "
        "anything: drain, quarantine, replace, incident, rma"
    )
    reports: int
    sample: dict[str, Any]
    verdict: dict[str, Any] | None = Field(description="the control plane's verdict on the evidence (acted on)")
    agent_verdict: dict[str, Any] | None = Field(description="the verdict the agent claimed (recorded only)")
    disagreements: int = Field(description="reports whose claimed verdict differed from the evidence")


class NodeEventOut(BaseModel):
    id: str
    node_id: str
    at: dt.datetime
    t_s: float = Field(description="the node's clock when it happened (s; the twin's clock on the twin)")
    type: str = Field(description="Normal or Warning")
    reason: str = Field(description="HealthAction, AgentDisagrees, ...")
    message: str
    agent_action: str | None
    server_action: str | None


class ReportAccepted(BaseModel):
    node_id: str
    hostname: str
    health_action: str | None = Field(description="the rung of the control plane's own verdict")
    agent_action: str | None = Field(description="the rung the agent claimed (None: no verdict sent)")
    disagreement: str | None = Field(description="why the claim differs from the evidence (None: it agrees)")
    actions: list[str] = Field(description="what the control plane did about this report (empty: nothing new)")
    reports: int


class NodeTokenOut(BaseModel):
    node_id: str
    hostname: str
    prefix: str
    node_token: str = Field(description="the agent's token (`vlxn_...`); shown once, never stored")
    created_at: dt.datetime


class RmaOut(BaseModel):
    id: str
    node_id: str
    node_name: str
    serial: str | None
    reasons: list[str]
    summary: str
    opened_at: dt.datetime


@router.post("/v1/nodes/{hostname}/reports", name="nodes.report", response_model=ReportAccepted)
def report(
    hostname: str, body: ReportBody, request: Request, ctx: Ctx = Depends(require("nodes:report"))
) -> dict[str, Any]:
    """A node agent's report: stored as the node's last one; the control plane judges the evidence itself
    (catalog thresholds, its history of the node, its peers) and acts on its own verdict (drain, GPU reset,
    reboot, quarantine, replacement from the spares, RMA record, NOC incident); the agent's verdict is
    recorded and, when it differs, flagged in the node's events."""
    if ctx.principal.name != f"node:{hostname}":
        raise errors.PermissionDeniedError("a node token reports for its own node only", scope="nodes:report")
    if body.hostname != hostname:
        raise errors.InvalidInputError(
            f"body hostname '{body.hostname}' differs from the path's '{hostname}'",
            hint="send the report to /v1/nodes/<this node's hostname>/reports",
        )
    node = ctx.scope.find(models.Node, "node", name=hostname)
    row, done = Commands(ctx.scope).record_report(
        node, body.model_dump(), getattr(request.app.state, "report_handler", None)
    )
    evidence = ctx.scope.latest(models_cloud.NodeEvidence, node_id=node.id)
    claimed = (evidence.agent_verdict or {}).get("action") if evidence is not None else None
    disagreement = None
    if claimed is not None and claimed != row.health_action:
        disagreement = f"agent claims {claimed}, the evidence shows {row.health_action}"
    ctx.audit(
        f"nodes/{node.id}/reports",
        detail={"health_action": row.health_action, "agent_action": claimed, "actions": done},
    )
    ctx.commit()
    return {
        "node_id": node.id,
        "hostname": node.name,
        "health_action": row.health_action,
        "agent_action": claimed,
        "disagreement": disagreement,
        "actions": done,
        "reports": row.reports,
    }


@router.get("/v1/nodes/{node_id}/report", name="nodes.last_report", response_model=ReportOut)
def last_report(node_id: str, ctx: Ctx = Depends(require("nodes:read"))) -> dict[str, Any]:
    """The node's last agent report and the verdict it carried."""
    node = ctx.scope.get(models.Node, node_id, "node")
    row = ctx.scope.latest(health_tables.NodeReport, node_id=node.id)
    if row is None:
        raise errors.NotFoundError(
            f"node '{node.name}' has not reported yet", hint="its agent reports with --control-plane URL --node-token T"
        )
    evidence = ctx.scope.latest(models_cloud.NodeEvidence, node_id=node.id) if ctx.principal.is_provider else None
    return node_health.report_out(row, node.name, evidence)


@router.get("/v1/nodes/{node_id}/events", name="nodes.events", response_model=schemas.Page[NodeEventOut])
def node_events(
    node_id: str,
    ctx: Ctx = Depends(require("nodes:read")),
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    """The node's health events: verdicts the control plane acted on, agents' claims it did not follow."""
    node = ctx.scope.get(models.Node, node_id, "node")
    rows, nxt = ctx.scope.page(models_cloud.NodeEvent, filters={"node_id": node.id}, cursor=cursor, limit=limit)
    return {"items": [{k: getattr(r, k) for k in NodeEventOut.model_fields} for r in rows], "next_cursor": nxt}


@router.post("/v1/nodes/{node_id}/credentials", name="nodes.rotate_token", status_code=201, response_model=NodeTokenOut)
def rotate_token(node_id: str, ctx: Ctx = Depends(require("fleet:operate"))) -> dict[str, Any]:
    """Issue a new token for the node's agent; earlier tokens stop working on their next request."""
    node = ctx.scope.get(models.Node, node_id, "node")
    row, token = Commands(ctx.scope).issue_node_token(node)
    ctx.audit(f"nodes/{node.id}/credentials", status_code=201, detail={"prefix": row.prefix})
    ctx.commit()
    return {
        "node_id": node.id,
        "hostname": node.name,
        "prefix": row.prefix,
        "node_token": token,
        "created_at": row.created_at,
    }


@router.get("/v1/rma-records", name="rma.list", response_model=schemas.Page[RmaOut])
def list_rma(
    ctx: Ctx = Depends(require("fleet:operate")),
    node_id: str | None = None,
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    """Parts to return to the vendor, with their evidence (provider only)."""
    rows, nxt = ctx.scope.page(health_tables.RmaRecord, filters={"node_id": node_id}, cursor=cursor, limit=limit)
    return {"items": [{k: getattr(r, k) for k in RmaOut.model_fields} for r in rows], "next_cursor": nxt}
