"""Cluster phases (``clusters.phase``) as the reconcilers use them, and settings of the reconcile loop.

PENDING -> ALLOCATING -> PROVISIONING -> NETWORKING -> STORAGE -> VALIDATING -> READY (or DEGRADED / FAILED);
a desired state of ``absent`` goes DELETING -> DELETED from any phase.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

PENDING = "Pending"
"""Declared through the API; nothing done yet."""
ALLOCATING = "Allocating"
"""Choosing single-tenant nodes, whole scalable units first, spares held back; also scale up/down."""
PROVISIONING = "Provisioning"
"""Image and firmware baseline on every node, running versions checked against the region's baseline."""
NETWORKING = "Networking"
"""Tenant VLAN in its VRF and InfiniBand partition key on every node."""
STORAGE = "Storage"
"""One volume per storage tier of the spec, mounted on every node."""
VALIDATING = "Validating"
"""Acceptance: per-node burn-in (GEMM, HBM, NVLink, IB ports, NVMe), then all-reduce and storage tests.
A failing node is replaced from the spares and the replacement goes through every phase."""
READY = "Ready"
"""Delivered: every node passed, the signed acceptance report is stored."""
DEGRADED = "Degraded"
"""Delivered short: fewer nodes than asked (no spare left) or a cluster test below the plan."""
FAILED = "Failed"
"""Could not be delivered (capacity, timeout, no networks left); the reason is in conditions and events."""
DELETING = "Deleting"
"""Nodes being drained, deprovisioned, sanitized and returned; networks released; volumes detached."""
DELETED = "Deleted"
"""Gone: no node, network or attachment left."""

ACTIVE_PHASES = (PENDING, ALLOCATING, PROVISIONING, NETWORKING, STORAGE, VALIDATING)
"""Phases with work in flight (and a timeout)."""
SETTLED_PHASES = (READY, DEGRADED, FAILED)
"""Phases that stay until the spec or the desired state changes."""

REPLICA = f"{socket.gethostname()}:{os.getpid()}"
"""This process, as actors name it in node transitions (``reconciler/cluster@host:pid``)."""

STEPS = ("allocated", "provisioned", "networked", "storage", "accepted")
"""Per-node progress inside a cluster, in order (``cluster_work.nodes[name]["step"]``)."""


def _f(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


@dataclass(frozen=True)
class ReconcileSettings:
    poll_s: float = field(default_factory=lambda: _f("VELYRIX_RECONCILE_POLL_S", 0.2))
    """Wall seconds between polls of pending driver operations."""
    idle_s: float = field(default_factory=lambda: _f("VELYRIX_RECONCILE_IDLE_S", 1.0))
    """Wall seconds between looks at settled clusters (spec changes, deletions)."""
    phase_timeout_s: float = field(default_factory=lambda: _f("VELYRIX_PHASE_TIMEOUT_S", 4 * 3600.0))
    """Wall seconds a cluster may stay in one active phase before it fails with a timeout."""
    max_attempts: int = field(default_factory=lambda: int(_f("VELYRIX_RECONCILE_MAX_ATTEMPTS", 3)))
    """Tries of a temporarily failing driver request before the node is replaced."""
    retry_backoff_s: float = field(default_factory=lambda: _f("VELYRIX_RECONCILE_BACKOFF_S", 0.5))
    """Wall seconds before retrying a temporarily failed request (doubled per attempt)."""
    image: str = field(default_factory=lambda: os.environ.get("VELYRIX_NODE_IMAGE", "velyrix-ubuntu-22.04-cuda-12.8"))
    """OS image installed on tenant nodes."""
