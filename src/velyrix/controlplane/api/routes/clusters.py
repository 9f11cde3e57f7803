"""``/v1/clusters``: a tenant's clusters, created from a ClusterSpec-shaped JSON body (validated by the
HCL loader's own checks), with their plan and status (phase, conditions, phase history, events), their
deletion (``DELETE``; ``POST .../destroy`` is its deprecated alias) and their signed acceptance report."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from velyrix import errors
from velyrix.controlplane import specs, status
from velyrix.controlplane.api import idempotency, lean_route, schemas, stored_json
from velyrix.controlplane.api.context import Ctx, check_if_match, etag, require, respond, with_etag
from velyrix.controlplane.commands import Commands
from velyrix.controlplane.db import models
from velyrix.planners import plan as planner

router = APIRouter(prefix="/v1/clusters", tags=["clusters"], responses=schemas.PROBLEM_RESPONSES)
IMMUTABLE = ("name", "region", "node_type")


def out(c: Any) -> dict[str, Any]:  # an ORM entity or a row of Scope.read
    return {
        "id": c.id,
        "tenant_id": c.tenant_id,
        "name": c.name,
        "region": c.region,
        "node_type": c.node_type,
        "node_count": c.node_count,
        "desired_state": c.desired_state,
        "spec": c.spec,
        "plan": c.plan,
        "status": {"phase": c.phase, "conditions": c.conditions, "phase_history": c.phase_history, "events": c.events},
        "created_at": c.created_at,
        "updated_at": c.updated_at,
        "version": c.version,
    }


def _check_capacity(ctx: Ctx, spec_region: str, node_type: str, node_count: int, already: int = 0) -> None:
    """The fleet can serve ``node_count`` (``already`` declared before), checked under the allocation lock
    until the request commits (``allocation.reserve``)."""
    Commands(ctx.scope).reserve_capacity(spec_region, node_type, node_count, already=already)


@router.get("", name="clusters.list", response_model=schemas.Page[schemas.ClusterOut])
async def list_clusters(
    ctx: Ctx = Depends(require("clusters:read", lazy=True)),
    name: str | None = None,
    region: str | None = None,
    phase: str | None = None,
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> Response:
    # One page read as GET /v1/clusters/{id} reads one (Ctx.read: on the event loop, its JSON columns sent
    # as stored). A comment, not a docstring: the docstring is the operation's OpenAPI description.
    filters = {"name": name, "region": region, "phase": phase}
    return await ctx.read(lambda scope: _page(scope, filters, cursor, limit))


@router.post("", name="clusters.create", status_code=201, response_model=schemas.ClusterOut)
def create_cluster(
    body: specs.ClusterSpecBody,
    request: Request,
    ctx: Ctx = Depends(require("clusters:write")),
    idempotency_key: str | None = schemas.IDEMPOTENCY_KEY,
) -> Any:
    """Declare a cluster. The answer carries its plan; reconcilers then provision it (phase Pending)."""

    def make() -> tuple[dict[str, Any], int]:
        spec = specs.validate(body)
        if ctx.scope.exists(models.Cluster, name=spec.name):
            raise errors.ConflictError(
                f"a cluster named '{spec.name}' exists in this tenant",
                hint="update it with PUT /v1/clusters/{id}, or pick another name",
            )
        _check_capacity(ctx, spec.region, spec.node_type, spec.node_count)
        cluster = models.Cluster(
            name=spec.name,
            region=spec.region,
            node_type=spec.node_type,
            node_count=spec.node_count,
            spec=specs.to_body(spec),
            plan=planner.plan_cluster(spec),
            conditions=[],
            phase_history=[],
            events=[],
        )
        status.set_phase(cluster, "Pending", actor=ctx.principal.actor, reason="cluster declared")
        status.set_condition(cluster, "Planned", True, "PlanComputed", "plan computed from the spec")
        if getattr(request.app.state, "fleet", None) is None:
            status.mark_no_reconciler(cluster)
        ctx.scope.add(cluster)
        ctx.audit(f"clusters/{cluster.id}", status_code=201, detail={"name": cluster.name})
        return out(cluster), 201

    return idempotency.create(ctx, idempotency_key, body, make, schemas.ClusterOut)


_HEAD = ("id", "tenant_id", "name", "region", "node_type", "node_count", "desired_state")
_TAIL = ("created_at", "updated_at", "version")
_LISTS = ("conditions", "phase_history", "events")


def _spliced(c: Any) -> bytes | None:
    """``c`` (a row read with ``json_text``) as ``ClusterOut``'s JSON, its JSON columns spliced in as
    stored (``api/stored_json.py``), keys in the model's order; None when a column is not stored text."""
    spec, plan = stored_json.stored(c.spec, dict), stored_json.stored(c.plan, dict)
    lists = [stored_json.stored(getattr(c, n), list) for n in _LISTS]
    if spec is None or plan is None or None in lists:
        return None
    head = stored_json.members({n: getattr(c, n) for n in _HEAD})
    tail = stored_json.members({n: getattr(c, n) for n in _TAIL})
    status_ = (
        f'{{"phase":{stored_json.scalar(c.phase)},"conditions":{lists[0]},"phase_history":{lists[1]},'
        f'"events":{lists[2]}}}'
    )
    return f'{{{head},"spec":{spec},"plan":{plan},"status":{status_},{tail}}}'.encode()


_BODIES = stored_json.Bodies()
"""``_spliced``'s bodies, by cluster row (``GET /v1/clusters/{id}`` of an unchanged cluster)."""


def _body(row: Any) -> bytes | None:
    """``_spliced(row)``, kept in ``_BODIES``."""
    body = _BODIES.get(row)
    if body is None and (body := _spliced(row)) is not None:
        _BODIES.put(row, body)
    return body


def _decoded(row: Any) -> dict[str, Any]:
    """``out(row)`` with its JSON columns decoded (a row whose columns are not stored text)."""
    data = out(row) | {n: stored_json.decoded(getattr(row, n)) for n in ("spec", "plan")}
    data["status"] |= {n: stored_json.decoded(getattr(row, n)) for n in _LISTS}
    return data


def _answer(scope: Any, cluster_id: str) -> Response:
    row = scope.read(models.Cluster, cluster_id, "cluster", json_text=True)
    body = _body(row)
    if body is None:  # decoded values (a driver's own JSON decoding): through the model
        return respond(schemas.ClusterOut, _decoded(row), row)
    return Response(body, media_type="application/json", headers={"ETag": etag(row)})


def _page(scope: Any, filters: dict[str, Any], cursor: str | None, limit: int) -> Response:
    """A page of ``Page[ClusterOut]``: the bodies of ``_answer`` joined, or through the model when one
    row's columns are not stored text."""
    rows, nxt = scope.page_rows(models.Cluster, filters=filters, cursor=cursor, limit=limit, json_text=True)
    bodies = [_body(row) for row in rows]
    if any(body is None for body in bodies):
        return respond(schemas.Page[schemas.ClusterOut], {"items": [_decoded(r) for r in rows], "next_cursor": nxt})
    items = b",".join(bodies)  # type: ignore[arg-type]
    tail = stored_json.scalar(nxt).encode()
    return Response(b'{"items":[' + items + b'],"next_cursor":' + tail + b"}", media_type="application/json")


@lean_route.get(router, "/{cluster_id}", name="clusters.get", response_model=schemas.ClusterOut)
async def get_cluster(cluster_id: str, ctx: Ctx = Depends(require("clusters:read", lazy=True))) -> Response:
    """The cluster, read on the event loop for SQLite (``Ctx.read``), its JSON columns sent as stored."""
    # (the docstring above is the OpenAPI description, kept as published): on PostgreSQL too, one round
    # trip that also reads the key's credential generation (require(..., lazy=True), api/authn.py)
    return await ctx.read(lambda scope: _answer(scope, cluster_id))


@router.put("/{cluster_id}", name="clusters.update", response_model=schemas.ClusterOut)
def update_cluster(
    cluster_id: str,
    body: specs.ClusterSpecBody,
    request: Request,
    response: Response,
    ctx: Ctx = Depends(require("clusters:write")),
    if_match: str | None = schemas.IF_MATCH,
) -> dict[str, Any]:
    """Replace the declared spec (node count, storage, workload, acceptance); re-plans the cluster."""
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    check_if_match(request, cluster)
    if cluster.desired_state != "present":
        raise errors.ConflictError(f"cluster '{cluster.name}' is being deleted")
    changed = [f for f in IMMUTABLE if getattr(body, f) != getattr(cluster, f)]
    if changed:
        raise errors.InvalidInputError(
            f"{', '.join(changed)} cannot change on an existing cluster", hint="declare a new cluster instead"
        )
    spec = specs.validate(body)
    _check_capacity(ctx, spec.region, spec.node_type, spec.node_count, already=cluster.node_count)
    cluster.node_count = spec.node_count
    cluster.spec = specs.to_body(spec)
    cluster.plan = planner.plan_cluster(spec)
    status.add_event(cluster, "SpecUpdated", f"spec updated by {ctx.principal.actor}")
    ctx.scope.flush()
    ctx.audit(f"clusters/{cluster.id}")
    ctx.commit()
    with_etag(response, cluster)
    return out(cluster)


def _request_deletion(ctx: Ctx, cluster: models.Cluster, delete_volumes: bool, reason: str) -> None:
    """The one deletion path of both verbs: desired state ``absent``, phase ``Deleting`` (once), and whether
    the teardown also deletes the cluster's volumes (kept by default)."""
    if delete_volumes:
        Commands(ctx.scope).cluster_work(cluster).delete_volumes = True
    if cluster.desired_state != "absent":
        cluster.desired_state = "absent"
        status.set_phase(cluster, "Deleting", actor=ctx.principal.actor, reason=reason)
    ctx.scope.flush()


@router.delete("/{cluster_id}", name="clusters.delete", status_code=202, response_model=schemas.ClusterOut)
def delete_cluster(
    cluster_id: str,
    request: Request,
    response: Response,
    ctx: Ctx = Depends(require("clusters:write")),
    if_match: str | None = schemas.IF_MATCH,
    delete_volumes: bool = Query(False, description="also delete the cluster's volumes (kept by default)"),
) -> dict[str, Any]:
    """Ask for the cluster's deletion (202): reconcilers drain, deprovision, sanitize and return its nodes;
    its volumes stay unless ``delete_volumes``."""
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    check_if_match(request, cluster)
    _request_deletion(ctx, cluster, delete_volumes, "deletion requested")
    ctx.audit(f"clusters/{cluster.id}", status_code=202, detail={"delete_volumes": True} if delete_volumes else None)
    ctx.commit()
    with_etag(response, cluster)
    return out(cluster)


class DestroyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    delete_volumes: bool = Field(False, description="also delete the cluster's volumes (kept by default)")


@router.post("/{cluster_id}/destroy", name="clusters.destroy", status_code=202, deprecated=True)
def destroy(cluster_id: str, body: DestroyBody, ctx: Ctx = Depends(require("clusters:write"))) -> dict[str, Any]:
    """Deprecated alias of ``DELETE /v1/clusters/{id}?delete_volumes=...`` (velyrix CLIs before 0.2 call it):
    the same deletion, without If-Match, answering ``{id, name, phase, delete_volumes}``."""
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    work = Commands(ctx.scope).cluster_work(cluster)
    work.delete_volumes = body.delete_volumes
    _request_deletion(ctx, cluster, body.delete_volumes, "destroy requested")
    ctx.audit(f"clusters/{cluster.id}", status_code=202, detail={"delete_volumes": body.delete_volumes})
    ctx.commit()
    return {"id": cluster.id, "name": cluster.name, "phase": cluster.phase, "delete_volumes": body.delete_volumes}


@router.get("/{cluster_id}/acceptance", name="clusters.acceptance")
def acceptance_report(cluster_id: str, ctx: Ctx = Depends(require("clusters:read"))) -> dict[str, Any]:
    """The latest signed acceptance report of the cluster: ``{"report": {...}, "signature": {...}}``."""
    cluster = ctx.scope.get(models.Cluster, cluster_id, "cluster")
    row = ctx.scope.latest(models.AcceptanceReport, cluster_id=cluster.id)
    if row is None:
        raise errors.NotFoundError(
            f"cluster '{cluster.name}' has no acceptance report yet (phase {cluster.phase})",
            hint="reports are written when validation ends (phase Ready or Degraded)",
        )
    return row.report
