"""How proactive the running cloud is: the twin's failures set against what the control plane did.

The twin knows its ground truth (``SimRegion.events``): each spontaneous failure at the catalog's rates,
and for the causes with a precursor (rising single-bit ECC before a DBE, remaps filling a bank, link errors,
temperature, media errors) when the precursor started and when its fault is due. The control plane knows
what it did: the stage history of every node (``node_transitions``, on the fleet's clock) and its findings
and actions on reports (``node_events`` ``HealthFinding`` / ``HealthAction``, on the node's clock). Both
clocks are the twin's simulated seconds here (``fleet.clock.TwinClock``: Unix seconds = epoch + simulated seconds).

Counted (only failures on nodes in production when they began, and whose outcome is known by ``now_s``):

- ``precursor_failures``: failures announced by a precursor; ``caught_before_fault``: those whose node
  left production (drained, quarantined: out of service, then replaced in its cluster) after the precursor
  began and before the fault was due. ``proactive_share`` = caught / precursor failures, the figure
  ``velyrix health evaluate`` reports offline as ``failures_caught_before_job_damage / precursor_failures``.
- ``failures``: every failure; ``detected``: those the control plane's verdict named (a finding or action on
  the node, or the node leaving production) at or after the fault fired, or caught before it; ``detection_s``: from the
  fault firing to that action (simulated s).

``GET /v1/sim/proactive`` (operators; ``velyrix.ops.twin_routes``) answers it on ``velyrix up``;
``velyrix report proactive`` prints it.
"""

from __future__ import annotations

import bisect
import datetime as dt
import statistics
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane import scoping
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import cloud as models_cloud
from velyrix.fleet import states


@dataclass(frozen=True)
class Failure:
    """One spontaneous failure of the twin: on ``hostname``, begun at ``start_s`` (the precursor's start, or
    the fault itself), its fault due or fired at ``fault_s``; ``fired``: whether the fault happened by now."""

    hostname: str
    cause: str
    kind: str
    start_s: float
    fault_s: float
    precursor: bool
    fired: bool


@dataclass
class NodeHistory:
    """What the control plane did to one node: ``stages`` [(simulated s, fleet stage)] in time order,
    ``actions`` [simulated s] of the server's findings and actions on it (ladder rungs above IGNORE)."""

    stages: list[tuple[float, str]] = field(default_factory=list)
    actions: list[float] = field(default_factory=list)

    def stage_at(self, t_s: float) -> str | None:
        i = bisect.bisect_right([t for t, _ in self.stages], t_s)
        return self.stages[i - 1][1] if i else None

    def left_production(self, after_s: float, before_s: float) -> float | None:
        """When the node first left production within [after_s, before_s), or None."""
        for t, stage in self.stages:
            if after_s <= t < before_s and stage != states.PRODUCTION:
                return t
        return None

    def acted(self, after_s: float) -> float | None:
        """The first health action or exit from production at or after ``after_s``, or None."""
        times = [t for t in self.actions if t >= after_s]
        out = self.left_production(after_s, float("inf"))
        if out is not None:
            times.append(out)
        return min(times) if times else None


def failures(events: list[Any]) -> list[Failure]:
    """The spontaneous failures among the twin's ``events`` (``SimEvent``s; hand-injected ones carry no
    cause and are left out). A precursor's fault that fired is folded into its failure."""
    fired = {(e.hostname, round(e.at_s, 3)) for e in events if e.kind == "fault" and e.cause is not None}
    out, from_precursor = [], set()
    for e in events:
        if e.kind != "precursor" or e.cause is None or e.due_s is None:
            continue
        key = (e.hostname, round(e.due_s, 3))
        from_precursor.add(key)
        out.append(Failure(e.hostname, e.cause, e.fault.kind, e.at_s, e.due_s, True, key in fired))
    for e in events:
        if e.kind == "fault" and e.cause is not None and (e.hostname, round(e.at_s, 3)) not in from_precursor:
            out.append(Failure(e.hostname, e.cause, e.fault.kind, e.at_s, e.at_s, False, True))
    return sorted(out, key=lambda f: f.start_s)


def histories(session: orm.Session, epoch_s: float) -> dict[str, NodeHistory]:
    """Per node name: its fleet-stage history and health actions, in simulated seconds (``epoch_s``: the
    Unix time of simulated second 0)."""
    names = dict(session.execute(sa.select(models.Node.id, models.Node.name)).all())
    out: dict[str, NodeHistory] = {n: NodeHistory() for n in names.values()}
    moves = session.execute(
        sa.select(models.NodeTransition.node_id, models.NodeTransition.at, models.NodeTransition.to_state)
        .where(models.NodeTransition.field == "fleet_stage")
        .order_by(models.NodeTransition.at)
    ).all()
    for node_id, at, to_state in moves:
        stamp = (at if at.tzinfo else at.replace(tzinfo=dt.UTC)).timestamp()  # SQLite keeps naive UTC
        out[names[node_id]].stages.append((stamp - epoch_s, to_state))
    acted = session.execute(
        sa.select(models_cloud.NodeEvent.node_id, models_cloud.NodeEvent.t_s).where(
            models_cloud.NodeEvent.reason.in_(("HealthAction", "HealthFinding")),
            models_cloud.NodeEvent.server_action != "IGNORE",
        )
    ).all()
    for node_id, t_s in acted:
        out[names[node_id]].actions.append(float(t_s))
    return out


def _outcomes(fails: list[Failure], nodes: dict[str, NodeHistory], now_s: float) -> dict[str, Any]:
    precursor = caught = total = detected = 0
    out_of_service = undecided = 0
    latencies: list[float] = []
    missed: list[dict[str, Any]] = []
    for f in fails:
        history = nodes.get(f.hostname, NodeHistory())
        if history.stage_at(f.start_s) != states.PRODUCTION:
            out_of_service += 1  # began on a node already out of service: no tenant could be hit
            continue
        left = history.left_production(f.start_s, f.fault_s) if f.precursor else None
        if left is None and not f.fired:
            undecided += 1  # its fault is due after now_s
            continue
        total += 1
        precursor += int(f.precursor)
        if left is not None:
            caught += 1
            detected += 1
            continue
        when = history.acted(f.fault_s)
        if when is None:
            missed.append({"hostname": f.hostname, "cause": f.cause, "kind": f.kind, "fault_s": f.fault_s})
            continue
        detected += 1
        latencies.append(when - f.fault_s)
    return {
        "failures": total,
        "detected": detected,
        "precursor_failures": precursor,
        "caught_before_fault": caught,
        "proactive_share": round(caught / precursor, 4) if precursor else None,
        "caught_share_of_all_failures": round(caught / total, 4) if total else None,
        "detection_s": {
            "median": round(statistics.median(latencies), 1) if latencies else None,
            "max": round(max(latencies), 1) if latencies else None,
        },
        "not_counted": {"began_out_of_service": out_of_service, "due_after_now": undecided},
        "missed": missed,
    }


def report(session: orm.Session, region: Any, epoch_s: float) -> dict[str, Any]:
    """The proactive report of a running twin ``region`` (a ``SimRegion``) against the database."""
    now_s = region.clock.now()
    out = _outcomes(failures(list(region.events)), histories(session, epoch_s), now_s)
    days = now_s / 86400.0
    rate = region.failure_rate_per_1000_node_days
    return {
        "now_s": now_s,
        "days": round(days, 3),
        "nodes": len(region.nodes),
        "seed": region.seed,
        "failure_rate_per_1000_node_days": rate,
        "expected_failures_at_rate": round(rate * len(region.nodes) * days / 1000.0, 1),
        "spontaneous_failures": len(failures(list(region.events))),
        **out,
    }


def api_report(scope: scoping.Scope, region: Any, epoch_s: float) -> dict[str, Any]:
    """``report`` on the session of an operator's request scope (``GET /v1/sim/proactive``,
    ``velyrix.ops.twin_routes``)."""
    return report(scope.session, region, epoch_s)
