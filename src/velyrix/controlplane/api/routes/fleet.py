"""Fleet routes: a cluster's signed acceptance report, a region's signing key, destroy with options, and
the digital twin's fault injection (``/v1/sim``, present when the control plane runs a twin)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from velyrix import catalog, errors
from velyrix.controlplane import status
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import signing, tables
from velyrix.fleet.drivers.sim.faults import KINDS as FAULT_KINDS

router = APIRouter(tags=["acceptance"], responses=schemas.PROBLEM_RESPONSES)
sim_router = APIRouter(prefix="/v1/sim", tags=["sim"], responses=schemas.PROBLEM_RESPONSES)


class NoTwinError(errors.VelyrixError):
    """``/v1/sim`` on a control plane without a digital twin (``velyrix server``, real hardware)."""

    code = "no_twin"
    http_status = 409
    template = "this control plane runs without a digital twin: there is no simulated node to act on"


@router.get("/v1/clusters/{cluster_id}/acceptance", name="clusters.acceptance")
def acceptance_report(cluster_id: str, ctx: Ctx = Depends(require("clusters:read"))) -> dict[str, Any]:
    """The latest signed acceptance report of the cluster: ``{"report": {...}, "signature": {...}}``."""
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    row = ctx.scope.latest(tables.AcceptanceReport, cluster_id=cluster.id)
    if row is None:
        raise errors.NotFoundError(
            f"cluster '{cluster.name}' has no acceptance report yet (phase {cluster.phase})",
            hint="reports are written when validation ends (phase Ready or Degraded)",
        )
    return row.report


@router.get("/v1/acceptance/keys/{region}", name="acceptance.key")
def signing_key(region: str, ctx: Ctx = Depends(require("regions:read"))) -> dict[str, str]:
    """The Ed25519 public key that signs the region's acceptance reports (pin it when verifying)."""
    catalog.region(region)
    public = signing.public_key_b64(region)
    import base64

    return {
        "region": region,
        "algorithm": "Ed25519",
        "public_key": public,
        "key_id": signing.key_id(base64.b64decode(public)),
    }


class DestroyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    delete_volumes: bool = Field(False, description="also delete the cluster's volumes (kept by default)")


@router.post("/v1/clusters/{cluster_id}/destroy", name="clusters.destroy", status_code=202)
def destroy(cluster_id: str, body: DestroyBody, ctx: Ctx = Depends(require("clusters:write"))) -> dict[str, Any]:
    """Tear the cluster down: nodes drained, deprovisioned, sanitized and returned; volumes kept unless
    ``delete_volumes``."""
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    work = ctx.scope.cluster_work(cluster)
    work.delete_volumes = body.delete_volumes
    if cluster.desired_state != "absent":
        cluster.desired_state = "absent"
        status.set_phase(cluster, "Deleting", actor=ctx.principal.actor, reason="destroy requested")
    ctx.scope.flush()
    ctx.audit(f"clusters/{cluster.id}", status_code=202, detail={"delete_volumes": body.delete_volumes})
    ctx.commit()
    return {"id": cluster.id, "name": cluster.name, "phase": cluster.phase, "delete_volumes": body.delete_volumes}


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


@sim_router.post("/faults", name="sim.faults", status_code=202)
def inject_fault(body: FaultBody, request: Request, ctx: Ctx = Depends(require("fleet:operate"))) -> dict[str, Any]:
    """Inject a fault into a twin node (now, or after ``precursor_s`` of precursor signals)."""
    from velyrix.fleet.drivers.sim import Fault

    runtime = _twin(request)
    fault = Fault(kind=body.kind, gpu=body.gpu, xid=body.xid, port=body.port, drive=body.drive, factor=body.factor)
    runtime.sim.inject(body.node, fault, precursor_s=body.precursor_s)
    event = runtime.sim.events[-1]
    ctx.audit(f"sim/nodes/{body.node}", status_code=202, detail=fault.to_dict())
    ctx.commit()
    return event.to_dict()


@sim_router.get("/events", name="sim.events")
def sim_events(
    request: Request, ctx: Ctx = Depends(require("fleet:operate")), limit: int = Depends(schemas.limit_param)
) -> dict[str, Any]:
    """The twin's latest faults and precursors (operators)."""
    runtime = _twin(request)
    return {"now_s": runtime.sim.clock.now(), "items": [e.to_dict() for e in runtime.sim.events[-limit:]]}
