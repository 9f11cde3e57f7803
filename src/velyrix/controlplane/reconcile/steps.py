"""Primitives of a cluster reconcile step: the ``Step`` (what one step works on), phase changes, failures,
node replacement and the per-node request loop. Phase handlers live in ``cluster`` and ``validation``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from dataclasses import replace as changed
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane import status
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import allocation, node_entry, phases
from velyrix.controlplane.reconcile.node_entry import NodeEntry
from velyrix.controlplane.reconcile.scheduler_service import SchedulerService
from velyrix.controlplane.reconcile.store import flush_nodes, move
from velyrix.fleet import states
from velyrix.fleet.drivers import base
from velyrix.fleet.hardware import StoredHardware

ACTOR = f"reconciler/cluster@{phases.REPLICA}"
STEP_ORDER = {s: i for i, s in enumerate(phases.STEPS)}


@dataclass
class Step:
    """Everything one reconcile step works on. ``entries`` is the cluster's work rows (``node_entry.fetch``),
    ``loaded`` what they were when read; ``save`` writes back the entries the step changed."""

    session: orm.Session
    cluster: models.Cluster
    work: models.ClusterWork
    driver: base.Driver
    settings: phases.ReconcileSettings
    members: dict[str, models.Node] = field(default_factory=dict)
    entries: dict[str, NodeEntry] = field(default_factory=dict)
    loaded: dict[str, NodeEntry] = field(default_factory=dict)
    requeue_s: float | None = None
    rewind: bool = False
    scheduler: SchedulerService | None = None
    """Who delivers the cluster's ``scheduler`` (``reconcile.scheduler``); None: nobody here."""

    def wait(self, seconds: float | None = None) -> None:
        """Ask to be called again after ``seconds`` (default: the poll interval)."""
        s = self.settings.poll_s if seconds is None else seconds
        self.requeue_s = s if self.requeue_s is None else min(self.requeue_s, s)

    def rid(self, kind: str, name: str) -> str:
        e = self.entries[name]
        return f"{self.cluster.id}/{e.seq}/{kind}/{name}/{e.attempt}"

    def save(self) -> None:
        """Store the entries this step changed (``node_entry.store``) and the count of nodes leaving; any
        change also bumps ``work``'s version, so a concurrent step on the same cluster fails at flush. The
        member node rows the step changed are written first, in bulk (``store.flush_nodes``)."""
        flush_nodes(self.session, self.members.values())
        if node_entry.store(self.session, self.cluster.id, self.loaded, self.entries):
            self.work.releasing = sum(1 for e in self.entries.values() if e.release)
            self.work.updated_at = models.utcnow()
        self.loaded = dict(self.entries)

    def live(self) -> dict[str, NodeEntry]:
        """Entries of nodes that belong to the cluster (not being released)."""
        return {n: e for n, e in self.entries.items() if not e.release}


def spec_digest(spec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def work_of(session: orm.Session, cluster: models.Cluster) -> models.ClusterWork:
    """The cluster's bookkeeping row (created on first use)."""
    work = session.scalar(sa.select(models.ClusterWork).where(models.ClusterWork.cluster_id == cluster.id))
    if work is None:
        work = models.ClusterWork(
            cluster_id=cluster.id,
            spec_digest="",
            generation=1,
            releasing=0,
            replacements=[],
            cluster_results=[],
            network={},
            retries=0,
            delete_volumes=False,
            phase_started_at=models.utcnow(),
        )
        session.add(work)
    return work


def set_phase(st: Step, phase: str, reason: str) -> None:
    if st.cluster.phase != phase:
        status.set_phase(st.cluster, phase, actor=ACTOR, reason=reason)
        st.work.phase_started_at = models.utcnow()


def fail(st: Step, reason: str, message: str) -> None:
    """Settle the cluster in FAILED (or DEGRADED when it already holds delivered nodes) with ``reason``."""
    delivered = any(e.step == "accepted" for e in st.live().values())
    status.set_condition(st.cluster, "Ready", False, reason, message)
    status.add_event(st.cluster, reason, message, "Warning")
    st.work.last_error = message
    set_phase(st, phases.DEGRADED if delivered else phases.FAILED, message)


# --- phases --------------------------------------------------------------------------------------


def on_failed_op(st: Step, name: str, kind: str, op: base.Operation) -> None:
    entry = st.entries[name]
    if op.retryable and entry.attempt + 1 < st.settings.max_attempts:
        entry = st.entries[name] = changed(entry, attempt=entry.attempt + 1)
        status.add_event(st.cluster, "Retry", f"{kind} on {name} failed ({op.error}); retrying", "Warning")
        st.wait(st.settings.retry_backoff_s * 2**entry.attempt)
        return
    replace(st, name, f"{kind} failed: {op.error}")


def replace(st: Step, name: str, reason: str) -> None:
    """Take ``name`` out of the cluster (quarantined, then deprovisioned and sanitized) and allocate a
    replacement near it; the replacement goes through every phase again."""
    node = st.members[name]
    st.entries[name] = changed(st.entries[name], release="replaced", failed=reason)
    node.last_error = reason[:2000]
    if node.fleet_stage == states.PRODUCTION:
        move(st.session, node, states.QUARANTINED, actor=ACTOR, reason=reason[:500])
    hw = StoredHardware.from_dict(node.hardware)
    record: dict[str, Any] = {
        "failed": name,
        "failed_serial": hw.serial,
        "reason": reason,
        "phase": st.cluster.phase,
        "at": models.utcnow().isoformat(),
        "replacement": None,
    }
    try:
        (new,) = allocation.allocate(st.session, st.cluster, 1, actor=ACTOR, replacement=True, near_su=hw.su)
    except errors.CapacityError:
        status.add_event(st.cluster, "NoSpare", f"{name} failed ({reason}); no spare left to replace it", "Warning")
        st.work.replacements = [*st.work.replacements, record]
        _left_short(st, name)
        return
    else:
        seq = st.work.generation
        st.work.generation = seq + 1
        st.members[new.name] = new
        st.entries[new.name] = NodeEntry(step="allocated", attempt=0, seq=seq)
        record["replacement"] = new.name
        st.rewind = True
        status.add_event(st.cluster, "NodeReplaced", f"{name} replaced by {new.name}: {reason}", "Warning")
    st.work.replacements = [*st.work.replacements, record]


def delivered_counts(held: int, want: int, replacements: list[dict[str, Any]]) -> str:
    """``8 nodes; 1 replaced`` or ``7 of 8 nodes; 1 replaced, 1 without a spare``: the cluster's size now
    against its declared size, and its replacement records (``replacement`` None: no spare was left)."""
    replaced = sum(1 for r in replacements if r.get("replacement"))
    lost = len(replacements) - replaced
    size = f"{held} nodes" if held >= want else f"{held} of {want} nodes"
    return f"{size}; {replaced} replaced" + (f", {lost} without a spare" if lost else "")


def _left_short(st: Step, name: str) -> None:
    """A delivered cluster lost ``name`` and no spare replaces it: its conditions count the nodes it holds
    now and it is Degraded (a cluster still being delivered says so when its validation ends)."""
    if st.cluster.phase not in (phases.READY, phases.DEGRADED):
        return
    held = sum(1 for e in st.entries.values() if not e.release)
    counts = delivered_counts(held, st.cluster.node_count, st.work.replacements)
    accepted = next((c for c in st.cluster.conditions if c["type"] == "AcceptancePassed"), None)
    passed = accepted is not None and accepted["status"] == "True"
    status.set_condition(st.cluster, "AcceptancePassed", passed, "AcceptanceReport", counts)
    why = f"{held} of {st.cluster.node_count} nodes: {name} was lost and no spare is left to replace it"
    status.set_condition(st.cluster, "Ready", False, "Degraded", why)
    set_phase(st, phases.DEGRADED, why)


def per_node(
    st: Step,
    from_step: str,
    to_step: str,
    kind: str,
    submit: Callable[[str], base.Operation],
    check: Callable[[models.Node, base.Operation], str | None] | None = None,
) -> bool:
    """Run ``submit`` for every live node at ``from_step``; on success (and ``check`` passing) move it to
    ``to_step``. Returns True when every live node is at ``to_step`` or beyond."""
    for name, entry in list(st.live().items()):
        if entry.step != from_step:
            continue
        op = submit(name)
        if not op.done:
            st.wait()
            continue
        if op.status == base.FAILED:
            on_failed_op(st, name, kind, op)
            continue
        problem = check(st.members[name], op) if check else None
        if problem:
            replace(st, name, problem)
            continue
        st.entries[name] = changed(st.entries[name], step=to_step)  # re-read: ``check`` may add results
    return all(STEP_ORDER[e.step] >= STEP_ORDER[to_step] for e in st.live().values())
