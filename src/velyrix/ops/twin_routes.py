"""The twin's telemetry endpoint, through which node agents in other processes read their twin node.

``GET /v1/sim/nodes/{hostname}/telemetry`` answers, to that node's own token (scope ``nodes:report``), what
the twin's devices show now (``velyrix.agent.collectors.sim.twin_telemetry``): the twin's hardware lives in
the process of ``velyrix up``, so this is how ``velyrix agent --collector twin`` reads it. Mounted by the
composition root (``velyrix.ops.service.OPS_ROUTERS``); without a twin (``velyrix server``) it answers 409
``no_twin``, as the other ``/v1/sim`` routes do.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from velyrix import errors
from velyrix.agent.collectors.sim import twin_telemetry
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.api.routes.sim import NoTwinError

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
