"""An operator's release of a quarantined node and its dispatch to RMA (``POST /v1/nodes/{id}/actions``,
``ops/node_actions.py``), decided by the server on the node's health evidence.

- ``release``: quarantined -> production (the fleet's ``transition()``: "cleared"). Only when the node's last
  agent report is clean now (up, health level ok, no problems: ``evidence``); else 409
  ``node_health_not_clean`` with the evidence, unless the operator overrides it (``override``), in which
  case the transition's reason records what the evidence said. The server's hold on the node
  (``NodeEvidence.held_action``) ends.
- ``rma``: quarantined (or burn-in) -> RMA, with an RMA record (``rma.list``) carrying the operator's
  reason and the last report's verdict.

A move the stage table forbids is 409 ``invalid_transition``. Each leaves a node event (``NodeAction``)
that the node's tenant reads too; the caller audits and commits."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from velyrix import errors
from velyrix.controlplane import node_evidence, scoping
from velyrix.controlplane.db import health_tables, models
from velyrix.controlplane.db.models import cloud as models_cloud
from velyrix.controlplane.reconcile.store import move
from velyrix.fleet import clock, states, transitions
from velyrix.fleet.hardware import StoredHardware
from velyrix.health.ladder import Level


class NodeHealthNotCleanError(errors.ConflictError):
    """A release of a node whose health evidence is not clean now (HTTP 409)."""

    code = "node_health_not_clean"
    template = "{message}"


@dataclass(frozen=True)
class Evidence:
    """What the node's last agent report says now: ``clean`` and a one-line ``summary``."""

    clean: bool
    summary: str


def evidence(scope: scoping.Scope, node: models.Node) -> Evidence:
    """The node's health evidence now: its last report (``NodeReport``) up, at health level ok, with no
    problems. No report at all is not clean (nothing shows the node healthy)."""
    report = scope.session.scalar(
        sa.select(health_tables.NodeReport).where(health_tables.NodeReport.node_id == node.id)
    )
    if report is None:
        return Evidence(False, "no agent report since the node was registered")
    if not report.up:
        return Evidence(False, "the node's last report says it is down")
    level = report.health_level if report.health_level is not None else int(Level.OK)
    if level != int(Level.OK) or report.problems:
        what = report.health_summary or "; ".join(str(p) for p in report.problems[:3]) or f"level {level}"
        return Evidence(False, f"last report: {Level(level).name.lower()}: {what}")
    return Evidence(True, "last report: ok")


def _check_move(node: models.Node, to_state: str) -> None:
    if not transitions.allowed(node.fleet_stage, to_state):
        raise transitions.InvalidTransitionError(
            node=node.name, field="fleet_stage", from_state=node.fleet_stage, to_state=to_state
        )


def release(scope: scoping.Scope, node: models.Node, *, actor: str, reason: str, override: bool) -> Evidence:
    """Quarantined -> production, on clean evidence or with ``override`` (recorded); returns the evidence."""
    if node.fleet_stage != states.QUARANTINED:
        raise transitions.InvalidTransitionError(
            node=node.name, field="fleet_stage", from_state=node.fleet_stage, to_state=states.PRODUCTION
        )
    found = evidence(scope, node)
    if not found.clean and not override:
        raise NodeHealthNotCleanError(
            f"{node.name} is not clean now ({found.summary})",
            hint="wait for a clean agent report, send it to RMA, or release it with override and a reason",
        )
    why = reason if found.clean else f"{reason} (released despite the evidence: {found.summary})"
    move(scope.session, node, states.PRODUCTION, actor=actor, reason=why)
    held = scope.session.scalar(
        sa.select(models_cloud.NodeEvidence).where(models_cloud.NodeEvidence.node_id == node.id)
    )
    if held is not None:
        held.held_action = None
    node_evidence.add_event(
        scope.session, node, clock.now_s(), "NodeAction", f"released to production by {actor}: {why}"
    )
    return found


def send_to_rma(scope: scoping.Scope, node: models.Node, *, actor: str, reason: str) -> str:
    """Quarantined or burn-in -> RMA with an RMA record; returns the record's id."""
    _check_move(node, states.RMA)
    found = evidence(scope, node)
    move(scope.session, node, states.RMA, actor=actor, reason=reason)
    record = models.RmaRecord(
        tenant_id=None,
        node_id=node.id,
        node_name=node.name,
        serial=StoredHardware.from_dict(node.hardware).serial,
        reasons=[f"operator: {reason}"],
        summary=found.summary,
    )
    scope.session.add(record)
    scope.session.flush()
    node_evidence.add_event(
        scope.session, node, clock.now_s(), "NodeAction", f"sent to RMA by {actor}: {reason}", kind="Warning"
    )
    return str(record.id)
