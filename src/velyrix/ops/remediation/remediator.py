"""Health verdicts wired to the fleet: drains through the scheduler seam, quarantine with replacement from
spares, RMA records, and NOC incidents when a tenant's cluster loses capacity.

``Remediator.handle(verdict)``:
1. carries the verdict out on the seam (``velyrix.health.actions``: drains name their source, ``health``;
   only ``health`` undrains what it drained);
2. QUARANTINE and up: moves the node's fleet stage to ``quarantined`` through ``fleet.transitions``
   (who, when, why recorded) and, if it belongs to a cluster, replaces it with a spare of the same node type
   so that the cluster keeps its size; with no spare left the NOC gets an incident for that cluster;
3. an RMA criterion (remap failure, 512 remaps, SRAM threshold, XID 64, or an RMA verdict) writes an
   ``RmaRecord`` with the evidence and moves the node to ``rma``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from velyrix.fleet import states, transitions
from velyrix.health import actions
from velyrix.health.drains import SchedulerSeam
from velyrix.health.engine import Verdict
from velyrix.health.ladder import Action
from velyrix.ops import noc

RMA_KEYS = ("remap_failure:", "remapped_rows_total:", "sram_uncorrectable_rma:", "xid:64:")
"""Reason keys that are RMA criteria (NVIDIA GPU Memory Error Management; REFERENCE.md section 3)."""


@dataclass
class FleetNode:
    """The fleet's view of a node that remediation needs (the control plane's nodes table has more)."""

    name: str
    node_type: str
    cluster: str | None = None
    provisioning_state: str = states.ACTIVE
    fleet_stage: str = states.PRODUCTION


@dataclass(frozen=True)
class RmaRecord:
    """A part to return to the vendor, with the evidence that justifies it."""

    node: str
    opened_s: float
    reasons: tuple[str, ...]
    summary: str

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "opened_s": self.opened_s, "reasons": list(self.reasons), "summary": self.summary}


@dataclass
class Remediator:
    """Applies verdicts to the fleet. ``spares`` maps node type -> names of spare nodes (in production,
    not in a cluster); ``clusters`` maps cluster -> ordered member names."""

    seam: SchedulerSeam
    nodes: dict[str, Any]
    """Name -> ``FleetNode`` (or any node with ``name``, ``node_type``, ``fleet_stage``: the control plane
    passes its node rows, with ``replacer`` and a database ``store``)."""
    spares: dict[str, list[str]] = field(default_factory=dict)
    clusters: dict[str, list[str]] = field(default_factory=dict)
    store: transitions.TransitionStore = field(default_factory=transitions.MemoryStore)
    noc_book: noc.NocBook = field(default_factory=noc.NocBook)
    clock: Callable[[], float] = time.time
    rma: list[RmaRecord] = field(default_factory=list)
    held: dict[str, Action] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    replacer: Callable[[Any], list[str]] | None = None
    """Replaces a quarantined node in its cluster and returns what it did; None: from ``spares`` in memory.
    The control plane plugs in its reconciler's replacement path (``velyrix.ops.remediation.node_reports``)."""

    def handle(self, verdict: Verdict) -> list[str]:
        """Apply ``verdict``; returns what was done, in order (also appended to ``log``)."""
        node = self.nodes[verdict.node]
        done: list[str] = []
        applied = actions.apply_verdict(verdict, self.seam, held_action=self.held.get(node.name))
        for op in applied.ops:
            done.append(f"{op} {node.name}")
        if "drain" in applied.ops:
            self.held[node.name] = verdict.action
        if "undrain" in applied.ops:
            self.held.pop(node.name, None)
        if verdict.action >= Action.QUARANTINE and node.fleet_stage == states.PRODUCTION:
            transitions.transition(
                node, states.QUARANTINED, actor="health", reason=verdict.summary(), store=self.store, now_s=self.clock()
            )
            done.append(f"quarantine {node.name}")
            done.extend(self.replacer(node) if self.replacer is not None else self._replace(node))
        criteria = tuple(r.key for r in verdict.reasons if r.key.startswith(RMA_KEYS))
        if (criteria or verdict.action == Action.RMA) and node.fleet_stage == states.QUARANTINED:
            self.rma.append(RmaRecord(node.name, self.clock(), criteria or ("verdict:RMA",), verdict.summary()))
            transitions.transition(
                node,
                states.RMA,
                actor="health",
                reason="RMA criterion: " + ", ".join(criteria),
                store=self.store,
                now_s=self.clock(),
            )
            done.append(f"rma {node.name}")
        self.log.extend(done)
        return done

    def _replace(self, node: FleetNode) -> list[str]:
        cluster = node.cluster
        if cluster is None:
            return []
        members = self.clusters.setdefault(cluster, [])
        size = len(members)
        pool = self.spares.get(node.node_type, [])
        while pool:
            spare = self.nodes[pool.pop(0)]
            if spare.fleet_stage != states.PRODUCTION or spare.cluster is not None:
                continue
            members[members.index(node.name)] = spare.name
            spare.cluster, node.cluster = cluster, None
            return [f"replace {node.name} with {spare.name} in {cluster}"]
        lost = sum(1 for m in members if self.nodes[m].fleet_stage != states.PRODUCTION)
        inc = self.noc_book.open(
            f"capacity:{cluster}",
            noc.capacity_priority(lost, size),
            f"cluster {cluster} lost capacity: {lost} of {size} nodes out, no {node.node_type} spare left",
            cluster=cluster,
            node=node.name,
            detail=f"{node.name} quarantined by health",
        )
        return [f"incident {inc.id} {inc.priority} {cluster}"]
