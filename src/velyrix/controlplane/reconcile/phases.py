"""Cluster phases (``clusters.phase``): the names, their order and the table of allowed moves (``MOVES``).

PENDING -> ALLOCATING -> PROVISIONING -> NETWORKING -> STORAGE -> VALIDATING -> READY (or DEGRADED / FAILED);
a desired state of ``absent`` goes DELETING -> DELETED from any phase. ``velyrix.controlplane.status.set_phase``
checks every move against ``MOVES`` and records who, when and why; the CLI shows progress along ``ORDER``.
The loop's settings are ``velyrix.settings.ReconcileSettings``.
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

ORDER = (PENDING, ALLOCATING, PROVISIONING, NETWORKING, STORAGE, VALIDATING, READY)
"""The way to delivery, in order (``velyrix apply`` shows its progress along it)."""
PHASES = (*ORDER, DEGRADED, DELETING, DELETED, FAILED)
"""Every cluster phase."""
INITIAL = PENDING
"""The phase the API records when a cluster is declared."""

_FAIL = frozenset({FAILED, DEGRADED})
"""Where ``reconcile.steps.fail`` settles a cluster: DEGRADED when it holds delivered nodes, else FAILED
(capacity, networks, cluster tests, or a phase timeout of ``reconcile.runner``)."""
_REWIND = frozenset({PROVISIONING, ALLOCATING})
"""Back to PROVISIONING when replacement nodes must catch up (``reconcile.cluster``); back to ALLOCATING when
the declared spec changed (node count)."""

# Phase -> the phases it may move to, and why each move exists. DELETING is reachable from every phase but
# DELETED (the API's DELETE, or the reconcilers when the desired state is ``absent``).
MOVES: dict[str, frozenset[str]] = {
    # declared: the reconcilers start allocating; nothing to wait on but capacity (timeout -> FAILED)
    PENDING: frozenset({ALLOCATING, DELETING}) | _FAIL,
    # nodes chosen: provision them; no capacity left -> FAILED
    ALLOCATING: frozenset({PROVISIONING, DELETING}) | _FAIL,
    # image and firmware verified: networks next; the spec changed -> allocate again
    PROVISIONING: frozenset({NETWORKING, ALLOCATING, DELETING}) | _FAIL,
    # tenant networks attached: storage next; a replacement node -> provision it first
    NETWORKING: frozenset({STORAGE, DELETING}) | _REWIND | _FAIL,
    # volumes mounted: acceptance next
    STORAGE: frozenset({VALIDATING, DELETING}) | _REWIND | _FAIL,
    # acceptance passed -> READY; passed short (no spare left, a cluster test below the plan) -> DEGRADED
    VALIDATING: frozenset({READY, DEGRADED, DELETING}) | _REWIND | _FAIL,
    # delivered: healing replaces nodes taken out of service (-> PROVISIONING), a new spec reallocates,
    # and a node lost without a spare leaves the cluster short (-> DEGRADED)
    READY: frozenset({DEGRADED, DELETING}) | _REWIND,
    # delivered short: healing and a new spec as from READY
    DEGRADED: frozenset({DELETING}) | _REWIND,
    # not delivered: only a new spec (-> ALLOCATING) or deletion moves it
    FAILED: frozenset({ALLOCATING, DELETING}),
    # tearing down: every node sanitized and returned, networks released
    DELETING: frozenset({DELETED}),
    # terminal: the row stays as a tombstone
    DELETED: frozenset(),
}

ACTIVE_PHASES = (PENDING, ALLOCATING, PROVISIONING, NETWORKING, STORAGE, VALIDATING)
"""Phases with work in flight (and a timeout)."""
SETTLED_PHASES = (READY, DEGRADED, FAILED)
"""Phases that stay until the spec or the desired state changes."""

REPLICA = f"{socket.gethostname()}:{os.getpid()}"
"""This process, as actors name it in node transitions (``reconciler/cluster@host:pid``)."""

STEPS = ("allocated", "provisioned", "networked", "storage", "accepted")
"""Per-node progress inside a cluster, in order (``reconcile.node_entry.NodeEntry.step``)."""
