"""``/v1/sim``: the digital twin's fault injection and events (answered when the control plane runs a twin,
``velyrix up``; 409 ``no_twin`` otherwise)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from velyrix import errors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.fleet.drivers.sim import Fault
from velyrix.fleet.drivers.sim.faults import KINDS as FAULT_KINDS

router = APIRouter(prefix="/v1/sim", tags=["sim"], responses=schemas.PROBLEM_RESPONSES)


class NoTwinError(errors.VelyrixError):
    """``/v1/sim`` on a control plane without a digital twin (``velyrix server``, real hardware)."""

    code = "no_twin"
    http_status = 409
    template = "this control plane runs without a digital twin: there is no simulated node to act on"


class FaultBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node: str = Field(max_length=128, description="hostname of a twin node")
    kind: str = Field(
        max_length=32,
        json_schema_extra=schemas.one_of(FAULT_KINDS),
        description="xid, ecc_dbe, ecc_sbe_storm, slow_gpu, ib_down, slow_disk, remap_failure, nvlink, thermal",
    )
    gpu: int | None = Field(None, ge=0, le=63)
    xid: int | None = Field(None, ge=1, le=1000)
    port: int | None = Field(None, ge=0, le=63)
    drive: int | None = Field(None, ge=0, le=63)
    factor: float | None = Field(None, ge=0.0, le=1.0)
    precursor_s: float = Field(0.0, ge=0.0, le=30 * 86400.0, description="simulated seconds of warning first")


def _twin(request: Request) -> Any:
    runtime = getattr(request.app.state, "fleet", None)
    if runtime is None or runtime.sim is None:
        raise NoTwinError(hint="start the control plane with `velyrix up` to run on the twin")
    return runtime


@router.post("/faults", name="sim.faults", status_code=202)
def inject_fault(body: FaultBody, request: Request, ctx: Ctx = Depends(require("fleet:operate"))) -> dict[str, Any]:
    """Inject a fault into a twin node (now, or after ``precursor_s`` of precursor signals)."""
    runtime = _twin(request)
    fault = Fault(kind=body.kind, gpu=body.gpu, xid=body.xid, port=body.port, drive=body.drive, factor=body.factor)
    runtime.sim.inject(body.node, fault, precursor_s=body.precursor_s)
    event = runtime.sim.events[-1]
    ctx.audit(f"sim/nodes/{body.node}", status_code=202, detail=fault.to_dict())
    ctx.commit()
    return dict(event.to_dict())


@router.get("/events", name="sim.events")
def sim_events(
    request: Request, ctx: Ctx = Depends(require("fleet:operate")), limit: int = Depends(schemas.limit_param)
) -> dict[str, Any]:
    """The twin's latest faults and precursors (operators)."""
    runtime = _twin(request)
    return {"now_s": runtime.sim.clock.now(), "items": [e.to_dict() for e in runtime.sim.events[-limit:]]}
