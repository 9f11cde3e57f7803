"""Cluster status bookkeeping: phase (with history), conditions and events. The API records the
first phase; the reconcilers move clusters on with ``set_phase``, which checks each move against the table
of ``velyrix.controlplane.reconcile.phases.MOVES`` and records who, when and why."""

from __future__ import annotations

from typing import Any

from velyrix import errors
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import phases

PHASES = phases.PHASES
"""Every cluster phase (``phases.PHASES``)."""
MAX_EVENTS = 200


class InvalidPhaseMoveError(errors.ConflictError):
    """A cluster phase move that ``phases.MOVES`` does not allow (a bug of the caller, or a race)."""

    code = "invalid_phase_move"

    def __init__(self, cluster: str, from_phase: str, to_phase: str) -> None:
        allowed = sorted(phases.MOVES.get(from_phase, frozenset()))
        super().__init__(
            f"cluster '{cluster}' cannot move from phase {from_phase} to {to_phase}",
            hint=f"from {from_phase} it may move to: {', '.join(allowed) or 'nothing (terminal)'}",
        )


def _now() -> str:
    return models.utcnow().isoformat()


def add_event(cluster: models.Cluster, reason: str, message: str, type_: str = "Normal") -> None:
    """Append an event (``type_`` ``Normal`` or ``Warning``); only the newest ``MAX_EVENTS`` are kept."""
    events = [*cluster.events, {"at": _now(), "type": type_, "reason": reason, "message": message}]
    cluster.events = events[-MAX_EVENTS:]


def set_phase(cluster: models.Cluster, phase: str, *, actor: str, reason: str) -> None:
    """Move ``cluster`` to ``phase`` and record it in the history (``{phase, from, at, actor, reason}``) and
    the events; a no-op when unchanged. The first record of a cluster names its current phase. A move that
    ``phases.MOVES`` does not allow raises ``InvalidPhaseMoveError`` and changes nothing; an unknown name
    raises ``UnknownNameError``."""
    if phase not in PHASES:
        raise errors.UnknownNameError("cluster phase", phase, PHASES)
    previous = cluster.phase or phases.INITIAL
    if previous == phase and cluster.phase_history:
        return
    if previous != phase and phase not in phases.MOVES.get(previous, frozenset()):
        raise InvalidPhaseMoveError(cluster.name, previous, phase)
    cluster.phase = phase
    record = {"phase": phase, "from": previous if cluster.phase_history else None, "at": _now()}
    cluster.phase_history = [*cluster.phase_history, {**record, "actor": actor, "reason": reason}]
    add_event(cluster, f"Phase{phase}", reason)


def set_condition(cluster: models.Cluster, type_: str, status: bool, reason: str, message: str = "") -> None:
    """Set condition ``type_`` (e.g. ``Planned``, ``NodesAllocated``, ``AcceptancePassed``)."""
    kept: list[dict[str, Any]] = [c for c in cluster.conditions if c["type"] != type_]
    previous = next((c for c in cluster.conditions if c["type"] == type_), None)
    value = "True" if status else "False"
    changed_at = previous["last_transition_at"] if previous and previous["status"] == value else _now()
    kept.append(
        {"type": type_, "status": value, "reason": reason, "message": message, "last_transition_at": changed_at}
    )
    cluster.conditions = kept


NO_RECONCILER = (
    "this control plane runs no reconcilers (velyrix server): nothing allocates, provisions or validates "
    "the cluster; run `velyrix up` (the twin) or a control plane with a fleet driver"
)


def mark_no_reconciler(cluster: models.Cluster) -> None:
    """Say on ``cluster`` that no reconciler will act on it (condition ``Reconciling`` False)."""
    set_condition(cluster, "Reconciling", False, "NoReconciler", NO_RECONCILER)


def mark_reconciled(cluster: models.Cluster, replica: str) -> None:
    """Say on ``cluster`` that a reconciler took it (condition ``Reconciling`` True)."""
    set_condition(cluster, "Reconciling", True, "Reconciler", f"reconciled by {replica}")
