"""Cluster phases (``clusters.phase``) as the reconcilers use them (the loop's settings: ``velyrix.settings``).

PENDING -> ALLOCATING -> PROVISIONING -> NETWORKING -> STORAGE -> VALIDATING -> READY (or DEGRADED / FAILED);
a desired state of ``absent`` goes DELETING -> DELETED from any phase.
"""

from __future__ import annotations

import os
import socket

from velyrix.settings import ReconcileSettings as ReconcileSettings  # re-exported: reconcilers take it from here

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
