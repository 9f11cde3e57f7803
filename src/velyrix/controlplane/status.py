"""Cluster status bookkeeping: phase (with history), conditions and events. The API records the
first phase; the reconcilers move clusters on with ``set_phase`` (who, when, why are recorded)."""

from __future__ import annotations

from typing import Any

from velyrix.controlplane.db import models

PHASES = (
    "Pending",
    "Allocating",
    "Provisioning",
    "Networking",
    "Storage",
    "Validating",
    "Ready",
    "Degraded",
    "Deleting",
    "Deleted",
    "Failed",
)
"""Cluster phases, in their usual order."""
MAX_EVENTS = 200


def _now() -> str:
    return models.utcnow().isoformat()


def add_event(cluster: models.Cluster, reason: str, message: str, type_: str = "Normal") -> None:
    """Append an event (``type_`` ``Normal`` or ``Warning``); only the newest ``MAX_EVENTS`` are kept."""
    events = [*cluster.events, {"at": _now(), "type": type_, "reason": reason, "message": message}]
    cluster.events = events[-MAX_EVENTS:]


def set_phase(cluster: models.Cluster, phase: str, *, actor: str, reason: str) -> None:
    """Move ``cluster`` to ``phase`` and record it in the history and the events (no-op if unchanged)."""
    if phase not in PHASES:
        from velyrix import errors

        raise errors.UnknownNameError("cluster phase", phase, PHASES)
    if cluster.phase == phase and cluster.phase_history:
        return
    cluster.phase = phase
    cluster.phase_history = [*cluster.phase_history, {"phase": phase, "at": _now(), "actor": actor, "reason": reason}]
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
