"""The ladder as the control plane carries it out: drains through the scheduler seam, quarantine with a
replacement from the spares, RMA records. One policy for every caller; the replacement itself is the
reconciler's one path (``reconcile.cluster.heal`` -> ``steps.replace`` -> ``allocation.allocate``), plugged in
as the required ``Replacer``.

``Remediator.handle(verdict)``:
1. carries the verdict out on the seam (``velyrix.health.actions``: drains name their source, ``health``;
   only ``health`` undrains what it drained; from DRAIN_NOW up, or at level fatal, the drain says "now");
2. ``takes_out(verdict)`` (DRAIN_AFTER_JOB and up, or a fatal finding at RESET_GPU and up: the tenant's job
   on the node is already damaged): the node's fleet stage moves to ``quarantined`` through
   ``fleet.transitions`` (who, when, why recorded) and the replacer takes it out of its cluster and puts a
   spare in (or opens the NOC incident when none is left); the fix of the rung (GPU reset, reboot) is done
   by the caller on the quarantined node, outside the tenant's cluster;
3. an RMA criterion (remap failure, 512 remaps, SRAM threshold, XID 64, an RMA verdict, or the same XID
   after repeated fixes: hardware) writes an ``RmaRecord`` with the evidence and moves the node to ``rma``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from velyrix.fleet import clock as fleet_clock
from velyrix.fleet import states, transitions
from velyrix.health import actions
from velyrix.health.drains import SchedulerSeam
from velyrix.health.engine import Verdict
from velyrix.health.ladder import Action, Level

RMA_KEYS = ("remap_failure:", "remapped_rows_total:", "sram_uncorrectable_rma:", "xid:64:")
"""Reason keys that are RMA criteria (NVIDIA GPU Memory Error Management; REFERENCE.md section 3)."""


class Replacer(Protocol):
    """Takes a quarantined node out of its cluster and puts a spare in its place (same node type, near it),
    or tells the NOC that none is left. Returns what it did (``replace A with B in C``, ``incident ...``)."""

    def __call__(self, node: Any, /) -> list[str]: ...


def takes_out(verdict: Verdict) -> bool:
    """Whether ``verdict`` takes the node out of service (quarantine and replacement): DRAIN_AFTER_JOB and
    up, or a fatal finding that asks for a reset or a reboot (the job on the node is already damaged; the
    tenant gets a healthy node now and the fix happens on the quarantined one)."""
    return verdict.action >= Action.DRAIN_AFTER_JOB or (
        verdict.level == Level.FATAL and verdict.action >= Action.RESET_GPU
    )


def rma_criteria(verdict: Verdict) -> tuple[str, ...]:
    """The reasons of ``verdict`` that send the part to the vendor."""
    found = [r.key for r in verdict.reasons if r.key.startswith(RMA_KEYS)]
    found += [r.key for r in verdict.reasons if r.source == "xid" and r.hardware and r.key not in found]
    if verdict.action == Action.RMA and not found:
        found.append("verdict:RMA")
    return tuple(found)


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
    """Applies verdicts to nodes with ``name``, ``node_type``, ``fleet_stage`` and ``provisioning_state``
    (the control plane's node rows). ``replacer`` is required: the control plane passes its reconciler's
    replacement path; tests pass the SQLite world's or a fake that honours ``Replacer``."""

    seam: SchedulerSeam
    nodes: dict[str, Any]
    replacer: Replacer
    store: transitions.TransitionStore = field(default_factory=transitions.MemoryStore)
    clock: Callable[[], float] = fleet_clock.now_s
    """Unix seconds of the moves (default: the fleet's clock, the twin's on a twin)."""
    rma: list[RmaRecord] = field(default_factory=list)
    held: dict[str, Action] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    def handle(self, verdict: Verdict) -> list[str]:
        """Apply ``verdict``; returns what was done, in order (also appended to ``log``)."""
        node = self.nodes[verdict.node]
        done: list[str] = []
        applied = actions.apply_verdict(verdict, self.seam, held_action=self.held.get(node.name))
        done.extend(f"{op} {node.name}" for op in applied.ops)
        if "drain" in applied.ops:
            self.held[node.name] = verdict.action
        if "undrain" in applied.ops:
            self.held.pop(node.name, None)
        if takes_out(verdict) and node.fleet_stage == states.PRODUCTION:
            transitions.transition(
                node, states.QUARANTINED, actor="health", reason=verdict.summary(), store=self.store, now_s=self.clock()
            )
            self.held[node.name] = max(verdict.action, Action.QUARANTINE)
            done.append(f"quarantine {node.name}")
            done.extend(self.replacer(node))
        criteria = rma_criteria(verdict)
        if criteria and node.fleet_stage == states.QUARANTINED:
            self.rma.append(RmaRecord(node.name, self.clock(), criteria, verdict.summary()))
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
