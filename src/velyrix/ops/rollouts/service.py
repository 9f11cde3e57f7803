"""Rollouts as the API and CLI use them: plan, apply (store, announce), status, pause, resume, abort.

``apply`` refuses a plan with blocks (409 ``rollout_blocked``), stores the rollout with its plan, and
announces every maintenance window the plan uses to the tenants (now: the notice runs from here). A retried
apply (same ``request_key``, or the same spec under the same name) returns the stored rollout.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane import scoping
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import rollouts as models_rollouts
from velyrix.declarations import rollout as decl
from velyrix.fleet import clock
from velyrix.ops.rollouts import engine, notices, states
from velyrix.ops.rollouts.world import World, fleet_view
from velyrix.planners import rollout as planner


class RolloutBlockedError(errors.VelyrixError):
    """The plan has blocks (a window too short, a cluster with no spare, a notice below a contract's)."""

    code = "rollout_blocked"
    http_status = 409
    template = "the rollout cannot be applied: its plan is blocked"


def plan(db: orm.Session | scoping.Scope, world: World, spec: decl.RolloutSpec) -> dict[str, Any]:
    """The plan of ``spec`` on the region as it is now (``planner.Plan.to_dict`` plus ``clusters``)."""
    session = _session(db)
    nodes, clusters = fleet_view(session, world, spec.region)
    result = planner.plan(spec, nodes, clusters, clock.now())
    out = result.to_dict()
    touched = {w.cluster for w in result.waves if w.cluster}
    out["clusters"] = {
        c.name: {
            "tenant": c.tenant,
            "node_count": c.node_count,
            "full_size": c.full_size,
            "notice_days": c.notice_days,
            "window": {**vars(c.window), "days": list(c.window.days)} if c.window else None,
            "nodes": sorted(n.hostname for n in nodes if n.cluster == c.name),
        }
        for c in clusters
        if c.name in touched
    }
    return out


def get(session: orm.Session, region: str, name: str) -> models_rollouts.Rollout:
    q = sa.select(models_rollouts.Rollout).where(
        models_rollouts.Rollout.region == region, models_rollouts.Rollout.name == name
    )
    row = session.scalars(q).first()
    if row is None:
        raise errors.NotFoundError(kind="rollout", name=name)
    return row


def apply(
    db: orm.Session | scoping.Scope,
    world: World,
    spec: decl.RolloutSpec,
    actor: str,
    request_key: str | None = None,
    sender: notices.Sender | None = None,
) -> tuple[models_rollouts.Rollout, bool]:
    """Store and announce the rollout; returns (row, created). The caller commits the audit event."""
    session = _session(db)
    if request_key:
        again = session.scalars(
            sa.select(models_rollouts.Rollout).where(models_rollouts.Rollout.request_key == request_key)
        ).first()
        if again is not None:
            return again, False
    existing = session.scalars(
        sa.select(models_rollouts.Rollout).where(
            models_rollouts.Rollout.region == spec.region, models_rollouts.Rollout.name == spec.name
        )
    ).first()
    if existing is not None:
        if existing.spec == spec.to_dict():
            return existing, False
        raise errors.ConflictError(
            f"rollout {spec.name} exists with another spec", hint="give the new rollout another name"
        )
    planned = plan(session, world, spec)
    if planned["blocks"]:
        raise RolloutBlockedError(
            hint="; ".join(b["message"] for b in planned["blocks"])[:1000], blocks=planned["blocks"]
        )
    row = models_rollouts.Rollout(
        id=models.new_id("rol"),
        name=spec.name,
        region=spec.region,
        component=spec.component,
        version=spec.version,
        spec=spec.to_dict(),
        plan=planned,
        state=states.PENDING,
        reason="applied",
        request_key=request_key,
        created_by=actor,
        announced_at=clock.now(),
    )
    session.add(row)
    session.flush()
    _announce(session, row, planned, sender)
    return row, True


def _announce(
    session: orm.Session, row: models_rollouts.Rollout, planned: dict[str, Any], sender: notices.Sender | None
) -> None:
    seen = set()
    for w in planned["waves"]:
        if not w["cluster"] or (w["cluster"], w["window_start"]) in seen:
            continue
        seen.add((w["cluster"], w["window_start"]))
        cluster = session.scalars(
            sa.select(models.Cluster).where(models.Cluster.name == w["cluster"], models.Cluster.region == row.region)
        ).first()
        if cluster is not None:
            start, end = dt.datetime.fromisoformat(w["window_start"]), dt.datetime.fromisoformat(w["window_end"])
            notices.announce(session, row, cluster, start, end, row.spec.get("notify", []), sender)


def status(db: orm.Session | scoping.Scope, row: models_rollouts.Rollout) -> dict[str, Any]:
    """The rollout's state, per wave progress, and counts of its steps (``velyrix rollout status``)."""
    session = _session(db)
    steps = list(
        session.scalars(sa.select(models_rollouts.RolloutStep).where(models_rollouts.RolloutStep.rollout_id == row.id))
    )
    done = {s.key for s in steps if s.status == "done"}
    waves = []
    for w in row.plan["waves"]:
        i = w["index"]
        upgraded = sum(1 for n in w["nodes"] if f"w{i}/upgrade/{n}" in done)
        gate = next(
            (s.detail for s in steps if s.key in (f"w{i}/soaked/gate", f"w{i}/validate/gate") and s.status == "done"),
            None,
        )
        waves.append(
            {
                "index": i,
                "stage": w["stage"],
                "cluster": w["cluster"],
                "nodes": len(w["nodes"]),
                "upgraded": upgraded,
                "finished": f"w{i}/finished" in done,
                "gate": gate,
                "window_start": w["window_start"],
            }
        )
    counts = Counter(f"{s.action}:{s.status}" for s in steps)
    failed = next((s for s in steps if s.action == "gate" and s.status == "done" and not s.detail.get("holds")), None)
    halted_at = None
    if failed is not None:
        i = int(failed.key.split("/")[0][1:])
        halted_at = {"wave": i, "stage": row.plan["waves"][i]["stage"], "gate": failed.detail}
    rolled_back = sorted(s.node for s in steps if s.key.startswith("rb/return/") and s.status == "done" and s.node)
    return {
        "id": row.id,
        "name": row.name,
        "region": row.region,
        "component": row.component,
        "version": row.version,
        "state": row.state,
        "reason": row.reason,
        "created_by": row.created_by,
        "announced_at": row.announced_at.isoformat(),
        "waves": waves,
        "steps": dict(sorted(counts.items())),
        "rolled_back_nodes": rolled_back,
        "halted_at": halted_at,
        "blocks": row.plan.get("blocks", []),
    }


ACTIONS = {"pause": states.PAUSED, "resume": states.RUNNING, "abort": states.ROLLING_BACK}


def act(
    db: orm.Session | scoping.Scope, row: models_rollouts.Rollout, action: str, actor: str
) -> models_rollouts.Rollout:
    """``pause``, ``resume`` or ``abort`` (roll back what was upgraded); ``ConflictError`` if the state
    forbids it. The caller commits (with the audit event)."""
    if action not in ACTIONS:
        raise errors.UnknownNameError("rollout action", action, ACTIONS)
    to = ACTIONS[action]
    if action == "abort" and row.state == states.PENDING:
        to = states.ROLLING_BACK
    engine.move(row, to, f"{action} by {actor}")
    return row


def _session(db: orm.Session | scoping.Scope) -> orm.Session:
    """The session behind ``db``: routes pass their scoped view (``controlplane.scoping``), the
    controller and tests a session."""
    return db.session if isinstance(db, scoping.Scope) else db


def recent(scope: scoping.Scope, limit: int) -> list[models_rollouts.Rollout]:
    """The newest ``limit`` rollouts (rollouts are the provider's: ``fleet:operate`` only)."""
    q = sa.select(models_rollouts.Rollout).order_by(models_rollouts.Rollout.created_at.desc()).limit(limit)
    return list(scope.session.scalars(q))


def find(scope: scoping.Scope, rollout_id: str) -> models_rollouts.Rollout:
    """The rollout with id or name ``rollout_id``; ``NotFoundError`` otherwise."""
    row = scope.session.get(models_rollouts.Rollout, rollout_id)
    if row is None:
        q = sa.select(models_rollouts.Rollout).where(models_rollouts.Rollout.name == rollout_id)
        row = scope.session.scalars(q).first()
    if row is None:
        raise errors.NotFoundError(kind="rollout", name=rollout_id)
    return row
