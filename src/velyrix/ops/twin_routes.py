"""The twin's routes of the ops layer: the node telemetry that agents in other processes read their twin node
through, and the proactive report.

- ``GET /v1/sim/nodes/{hostname}/telemetry`` answers, to that node's own token (scope ``nodes:report``), what
the twin's devices show now (``velyrix.agent.collectors.sim.twin_telemetry``): the twin's hardware lives in
  the process of ``velyrix up``, so this is how ``velyrix agent --collector twin`` reads it.
- ``GET /v1/sim/proactive`` (operators): the twin's spontaneous failures against what the control plane did
  (``velyrix.ops.proactive``; ``velyrix report proactive``).

Mounted by the composition root (``velyrix.ops.service.OPS_ROUTERS``); without a twin (``velyrix server``)
both answer 409 ``no_twin``, as the other ``/v1/sim`` routes do.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from velyrix import errors
from velyrix.agent.collectors.sim import twin_telemetry
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.api.routes.sim import NoTwinError
from velyrix.ops import proactive

router = APIRouter(prefix="/v1/sim", tags=["sim"], responses=schemas.PROBLEM_RESPONSES)


@router.get("/nodes/{hostname}/telemetry", name="sim.telemetry")
def telemetry(hostname: str, request: Request, ctx: Ctx = Depends(require("nodes:report"))) -> dict[str, Any]:
    """What the twin node's hardware shows now (a ``NodeSample`` in JSON, stamped with the twin's clock),
    for that node's own agent (its node token)."""
    if ctx.principal.name != f"node:{hostname}":
        raise errors.PermissionDeniedError("a node token reads its own node only", scope="nodes:report")
    runtime = getattr(request.app.state, "fleet", None)
    if runtime is None or runtime.sim is None:
        raise NoTwinError(hint="start the control plane with `velyrix up` to run on the twin")
    return twin_telemetry(runtime.sim, hostname)


@router.get("/proactive", name="sim.proactive")
def proactive_report(request: Request, ctx: Ctx = Depends(require("fleet:operate"))) -> dict[str, Any]:
    """The twin's spontaneous failures against what the control plane did: the share caught before their
    fault, and every fault detected (operators; ``velyrix report proactive``)."""
    runtime = getattr(request.app.state, "fleet", None)
    if runtime is None or runtime.sim is None:
        raise NoTwinError(hint="start the control plane with `velyrix up --spontaneous-faults`")
    return proactive.api_report(ctx.scope, runtime.sim, getattr(runtime.clock, "epoch_s", 0.0))
