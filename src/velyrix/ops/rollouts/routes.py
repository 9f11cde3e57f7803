"""``/v1/rollouts`` (provider operators, scope ``fleet:operate``): plan, apply, list, status and the
``pause``/``resume``/``abort`` actions of staged rollouts, every change audited; ``/v1/sim/defects``: ship a
bad version in the twin. Rollouts act on the running fleet: without one (``velyrix server`` with no fleet
runtime) they answer 409 ``no_twin`` after the body was checked. Mounted by ``velyrix.ops.service``."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from velyrix.catalog import versions
from velyrix.controlplane.api import idempotency, schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.api.routes.sim import NoTwinError
from velyrix.controlplane.db.models import rollouts as models_rollouts
from velyrix.declarations import rollout as decl
from velyrix.fleet.drivers.sim import defects
from velyrix.ops.rollouts import bodies, service
from velyrix.ops.rollouts.world import World, twin_world

router = APIRouter(prefix="/v1/rollouts", tags=["rollouts"], responses=schemas.PROBLEM_RESPONSES)
sim_router = APIRouter(prefix="/v1/sim", tags=["sim"], responses=schemas.PROBLEM_RESPONSES)


class RolloutOut(BaseModel):
    id: str
    name: str
    region: str
    component: str
    version: str
    state: str
    reason: str
    created_by: str
    announced_at: str
    waves: list[dict[str, Any]]
    steps: dict[str, int]
    rolled_back_nodes: list[str]
    halted_at: dict[str, Any] | None
    blocks: list[dict[str, Any]]


class ActionBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["pause", "resume", "abort"]


class DefectBody(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"allOf": [bodies.component_versions()]})
    component: str = Field(max_length=63, json_schema_extra=schemas.one_of(versions.component_names()))
    version: str = Field(max_length=63, description="a known version of the component")
    effect: str = Field(
        max_length=32,
        pattern=r"^(xid:([1-9][0-9]{0,2}|1000)|slow_gemm:0?\.[0-9]{0,5}[1-9]|no_boot)$",
        description="xid:N (1..1000), slow_gemm:F (0 < F < 1) or no_boot",
    )


def world_of(request: Request) -> World:
    """The running fleet's world (the twin's driver and drain seam), made once per app."""
    world = getattr(request.app.state, "rollout_world", None)
    if world is not None:
        return world  # type: ignore[no-any-return]
    runtime = getattr(request.app.state, "fleet", None)
    if runtime is None or runtime.sim is None:
        raise NoTwinError(hint="rollouts run on the fleet of `velyrix up`")
    request.app.state.rollout_world = world = twin_world(runtime.sim, runtime.driver)
    return world


def _spec(body: bodies.RolloutBody) -> decl.RolloutSpec:
    return decl.from_dict(body.raw())


@router.post("/plan", name="rollouts.plan")
def plan_rollout(
    body: bodies.RolloutBody, request: Request, ctx: Ctx = Depends(require("fleet:operate"))
) -> dict[str, Any]:
    """The plan on the fleet as it is now: waves, their nodes, the windows per tenant, what blocks."""
    spec = _spec(body)
    planned = service.plan(ctx.scope, world_of(request), spec)
    ctx.audit(f"rollouts/plan/{spec.name}", detail={"waves": len(planned["waves"]), "blocks": len(planned["blocks"])})
    ctx.commit()
    return planned


@router.post("", name="rollouts.create", status_code=201, response_model=RolloutOut)
def create_rollout(
    body: bodies.RolloutBody,
    request: Request,
    ctx: Ctx = Depends(require("fleet:operate")),
    idempotency_key: str | None = schemas.IDEMPOTENCY_KEY,
) -> Any:
    """Apply a rollout: planned, refused with 409 ``rollout_blocked`` if its plan is blocked, stored and
    announced to the tenants (their maintenance windows, events, pages); the controller then runs it."""
    spec = _spec(body)
    world = world_of(request)

    def make() -> tuple[dict[str, Any], int]:
        row, created = service.apply(ctx.scope, world, spec, ctx.principal.actor, idempotency_key)
        if created:
            ctx.audit(f"rollouts/{row.id}", status_code=201, detail={"name": row.name, "version": row.version})
        return service.status(ctx.scope, row), 201 if created else 200

    return idempotency.create(ctx, idempotency_key, body, make, RolloutOut)


@router.get("", name="rollouts.list")
def list_rollouts(
    ctx: Ctx = Depends(require("fleet:operate")), limit: int = Depends(schemas.limit_param)
) -> dict[str, Any]:
    rows = service.recent(ctx.scope, limit)
    return {
        "items": [
            {
                "id": r.id,
                "name": r.name,
                "region": r.region,
                "component": r.component,
                "version": r.version,
                "state": r.state,
            }
            for r in rows
        ]
    }


def _row(ctx: Ctx, rollout_id: str) -> models_rollouts.Rollout:
    return service.find(ctx.scope, rollout_id)


@router.get("/{rollout_id}", name="rollouts.get", response_model=RolloutOut)
def get_rollout(rollout_id: str, ctx: Ctx = Depends(require("fleet:operate"))) -> dict[str, Any]:
    """The rollout (by id or name): state, per wave progress and gates, step counts."""
    return service.status(ctx.scope, _row(ctx, rollout_id))


@router.post("/{rollout_id}/actions", name="rollouts.act", response_model=RolloutOut)
def act_on_rollout(rollout_id: str, body: ActionBody, ctx: Ctx = Depends(require("fleet:operate"))) -> dict[str, Any]:
    """``pause`` (between steps), ``resume``, or ``abort`` (roll back every node the rollout upgraded)."""
    row = _row(ctx, rollout_id)
    before = row.state
    service.act(ctx.scope, row, body.action, ctx.principal.actor)
    ctx.audit(f"rollouts/{row.id}", detail={"action": body.action, "from": before, "to": row.state})
    ctx.commit()
    return service.status(ctx.scope, row)


@sim_router.post("/defects", name="sim.defects", status_code=201)
def ship_defect(body: DefectBody, request: Request, ctx: Ctx = Depends(require("fleet:operate"))) -> dict[str, Any]:
    """Make the twin's nodes that install ``component`` at ``version`` misbehave as ``effect``."""
    world = world_of(request)
    defect = defects.parse(body.component, body.version, body.effect)
    world.driver.defects.ship(defect)  # type: ignore[attr-defined]
    ctx.audit(f"sim/defects/{body.component}/{body.version}", status_code=201, detail=defect.to_dict())
    ctx.commit()
    return defect.to_dict()
