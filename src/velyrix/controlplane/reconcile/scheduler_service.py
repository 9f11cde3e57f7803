"""What the reconcilers' Scheduler step (``reconcile.scheduler``) asks of a scheduler service, and what it
answers: the cluster to deliver (``Target``), where a delivery stands (``Delivery``) and the service's
calls (``SchedulerService``: every call returns at once)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

DELIVERING, READY, ARTIFACTS, FAILED, REMOVED = "delivering", "ready", "artifacts", "failed", "removed"


@dataclass(frozen=True)
class Target:
    """What to deliver: the cluster (id, name, tenant's name), its ``scheduler`` and node hostname → node type."""

    cluster_id: str
    name: str
    tenant: str
    kind: str
    nodes: dict[str, str]
    fabric: str | None = None


@dataclass(frozen=True)
class Delivery:
    """Where a delivery stands (``state``: one of the constants above) and what a tenant needs to use it."""

    state: str
    message: str
    env: dict[str, str] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)


class SchedulerService(Protocol):
    """Runs the schedulers of delivered clusters; every call returns at once."""

    def ensure(self, target: Target) -> Delivery:
        """Start, or follow a changed node list of, ``target``'s scheduler; where it stands now."""
        ...

    def remove(self, cluster_id: str) -> Delivery:
        """Stop the cluster's scheduler and remove its accounts (accounting records stay)."""
        ...
