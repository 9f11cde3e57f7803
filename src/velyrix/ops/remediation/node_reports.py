"""The control plane's verdict on a node report, carried out on its database and through the fleet driver.

``handle`` gets the server's own judgement of a report (``velyrix.controlplane.node_evidence``) and runs the
ladder (``velyrix.ops.remediation.remediator.Remediator``) on the node's row:

- drains go to ``ClusterEventSeam`` (Warning events of the node's cluster: the tenant sees them, its
  scheduler follows the node's stage; the Slurm seam lives with the scheduler);
- the fix of the rung (GPU reset, reboot) goes through the driver (``Driver.reset_gpu`` / ``reboot``), is
  recorded in the server's history of the node (so the same fault after the fix climbs the ladder: the
  recurrence rule) and is not repeated within ``FIX_HOLD_S`` of the node's clock;
- a node taken out of service (``remediator.takes_out``) is quarantined through ``fleet.transitions`` and
  replaced by the reconciler's one path (``reconcile.cluster.heal``: a spare of the same type, same SU where
  possible; the replacement is provisioned and validated, the acceptance report re-signed); the cluster's
  NOC incident names it, with counts taken from the database;
- an RMA criterion: an ``rma_records`` row with the evidence, and the node moves to ``rma``;
- a quarantined node out of every cluster whose fix is done and whose evidence is clean again goes back to
  burn-in (the intake tests it before it is sold again).

Everything happens in the report's transaction: the report, the moves, the replacement and the audit event
commit together or not at all.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane import node_evidence, status
from velyrix.controlplane.access import provider_actions
from velyrix.controlplane.db import health_tables, models
from velyrix.controlplane.db.models import cloud as models_cloud
from velyrix.controlplane.reconcile import cluster as cluster_mod
from velyrix.controlplane.reconcile import leases, tables
from velyrix.controlplane.reconcile.store import DbTransitionStore, move
from velyrix.fleet import clock, states
from velyrix.fleet.drivers import base
from velyrix.fleet.hardware import StoredHardware
from velyrix.health.drains import SchedulerSeam
from velyrix.health.engine import Verdict
from velyrix.health.ladder import Action, Level
from velyrix.ops import noc
from velyrix.ops.remediation import degradation, remediator

FIX_HOLD_S = 1800.0
"""Velyrix design value: a GPU reset or reboot of a node is not asked for again within this many seconds of
the node's clock (the first may still be running; its effect shows in a later report)."""
ACTOR = "health/control-plane"


class ClusterEventSeam(SchedulerSeam):
    """A scheduler seam that records drains, undrains and reboots as events of the node's cluster, and
    passes drains, undrains and reboots on to ``scheduler`` (the seam of the Slurm delivered with the cluster, when
    one runs: ``velyrix.ops.scheduler.twin_delivery``); a scheduler that refuses is an event, not a lost report."""

    def __init__(self, cluster: models.Cluster | None, scheduler: SchedulerSeam | None = None) -> None:
        self.cluster = cluster
        self.scheduler = scheduler
        self.reboots: list[tuple[str, str]] = []

    def _forward(self, what: str, node: str, call: Callable[[SchedulerSeam], None]) -> None:
        if self.scheduler is None:
            return
        try:
            call(self.scheduler)
        except errors.VelyrixError as exc:
            self._event("SchedulerUnreachable", f"{what} {node} not applied in the cluster's scheduler: {exc.message}")

    def _event(self, reason: str, message: str) -> None:
        if self.cluster is not None:
            status.add_event(self.cluster, reason, message, "Warning")

    def drain(self, node: str, reason: str, source: str) -> None:
        self._event("HealthDrain", f"{node} drained by {source}: {reason}")
        self._forward("drain of", node, lambda s: s.drain(node, reason, source))

    def undrain(self, node: str, source: str) -> None:
        self._event("HealthUndrain", f"{node} released by {source}")
        self._forward("release of", node, lambda s: s.undrain(node, source))

    def reboot(self, node: str, reason: str) -> None:
        """Recorded; passed on to the scheduler by ``forward_reboots`` once the ladder is done."""
        self._event("HealthReboot", f"{node} rebooting: {reason}")
        self.reboots.append((node, reason))

    def forward_reboots(self, members: set[str]) -> list[str]:
        """Pass the reboots of nodes that stay in the cluster (``members``) on to its scheduler (Slurm: ``scontrol
        reboot ASAP``: once the node's jobs end; it comes back held by health's drain until health releases
        it). A node taken out (quarantined) leaves the cluster: the driver reboots it there, outside the cluster."""
        done = []
        for node, reason in self.reboots:
            if node in members and self.scheduler is not None:
                self._forward("reboot of", node, functools.partial(_reboot_in, node=node, reason=reason))
                done.append(f"reboot {node} in the cluster's scheduler once its jobs end")
        return done


def _reboot_in(scheduler: SchedulerSeam, *, node: str, reason: str) -> None:
    scheduler.reboot(node, reason)


def _incident_title(session: orm.Session, cluster: models.Cluster, nodes: list[str]) -> str:
    work = session.scalar(sa.select(tables.ClusterWork).where(tables.ClusterWork.cluster_id == cluster.id))
    replaced = {r["failed"] for r in (work.replacements if work else []) if r.get("replacement")}
    ok = sum(1 for n in nodes if n in replaced)
    return (
        f"cluster {cluster.name}: {len(nodes)} of {cluster.node_count} nodes failed ({', '.join(nodes)}); "
        f"{ok} replaced from spares, {len(nodes) - ok} without a {cluster.node_type} spare"
    )


def open_incident(
    session: orm.Session, cluster: models.Cluster, node: models.Node, verdict: Verdict, detail: str
) -> health_tables.Incident:
    """Open (or extend) the one open health incident of ``cluster``: it names every failed node; its title
    counts them from the database (replaced or not). P1 when a finding is fatal (a tenant's job was hit) or
    more than ``noc.P1_FRACTION`` of the cluster is out without replacement, else P2."""
    key = f"capacity:{cluster.id}"
    row = session.scalar(
        sa.select(health_tables.Incident).where(
            health_tables.Incident.key == key, health_tables.Incident.resolved_at.is_(None)
        )
    )
    members = session.scalars(sa.select(models.Node).where(models.Node.cluster_id == cluster.id)).all()
    lost = sum(1 for m in members if m.fleet_stage != states.PRODUCTION)
    priority = "P1" if verdict.level == Level.FATAL else noc.capacity_priority(lost, cluster.node_count)
    nodes = list(row.nodes or []) if row is not None else []
    if node.name not in nodes:
        nodes.append(node.name)
    title = _incident_title(session, cluster, nodes)
    if row is None:
        taken = session.scalar(sa.select(sa.func.count()).select_from(health_tables.Incident)) or 0
        row = health_tables.Incident(
            number=f"INC-{int(taken) + 1:05d}",
            key=key,
            priority=priority,
            title=title,
            tenant_id=cluster.tenant_id,
            cluster_id=cluster.id,
            nodes=nodes,
            opened_at=clock.now(),  # the fleet's clock: the twin's on a twin
        )
        session.add(row)
    row.priority = min(row.priority, priority)  # "P1" < "P2": never downgraded while open
    row.nodes, row.title = nodes, title
    row.detail = (f"{row.detail}\n{detail}" if row.detail else detail)[-4000:]
    session.flush()
    return row


def _tenant_line(verdict: Verdict, node: str, t_s: float) -> str:
    top = verdict.reasons[0] if verdict.reasons else None
    what = f"{top.key.split(':')[-1]} {top.message}" if top else verdict.action.name
    when = "now" if verdict.action >= Action.DRAIN_NOW or verdict.level == Level.FATAL else "after its job"
    at = models.utcnow().isoformat(timespec="seconds")
    return f"{what} on node {node} at {at} (node clock {t_s:.0f} s): drained {when}, quarantined"


def _replacer(
    session: orm.Session,
    cluster: models.Cluster | None,
    verdict: Verdict,
    t_s: float,
    replica_leases: leases.Fence | None = None,
) -> remediator.Replacer:
    def replace(node: Any) -> list[str]:
        quarantined = node
        if cluster is None:
            return []
        records = cluster_mod.heal(session, cluster, held=replica_leases)
        if records is None:  # another replica holds the cluster's lease: its reconciler replaces the node
            line = _tenant_line(verdict, node.name, t_s)
            status.add_event(cluster, "NodeOutOfService", f"{line}; replaced on the reconciler's next pass", "Warning")
            inc = open_incident(session, cluster, node, verdict, f"{node.name}: {node.last_error or verdict.summary()}")
            return [f"incident {inc.number} {inc.priority} {cluster.name}"]
        done = []
        for record in records:
            line = _tenant_line(verdict, record["failed"], t_s)
            if record.get("replacement"):
                done.append(f"replace {record['failed']} with {record['replacement']} in {cluster.name}")
                status.add_event(cluster, "NodeHealed", f"{line}, replaced by {record['replacement']}", "Warning")
            else:
                status.add_event(cluster, "NodeLost", f"{line}; no spare left to replace it", "Warning")
            inc = open_incident(session, cluster, quarantined, verdict, f"{record['failed']}: {record['reason']}")
            done.append(f"incident {inc.number} {inc.priority} {cluster.name}")
        return done

    return replace  # honours remediator.Replacer


def _gpus_of(verdict: Verdict, rung: Action) -> list[int]:
    out = set()
    for r in verdict.reasons:
        if r.action == rung and ":gpu" in r.key:
            tail = r.key.rsplit(":gpu", 1)[1]
            if tail.isdigit():
                out.add(int(tail))
    return sorted(out)


def _poll_pending(driver: base.Driver | None, row: models_cloud.NodeEvidence) -> None:
    if driver is None or not row.pending_ops:
        return
    left = []
    for rid, kind in row.pending_ops:
        try:
            op = driver.operation(rid)
        except Exception:  # the driver restarted and forgot it: the fix is asked for again after the hold
            continue
        if not op.done:
            left.append([rid, kind])
    row.pending_ops = left


def _fix(
    driver: base.Driver | None, node: models.Node, row: models_cloud.NodeEvidence, verdict: Verdict, t_s: float
) -> list[str]:
    """The rung's fix through the driver (GPU reset or reboot), once per ``FIX_HOLD_S``."""
    rung = verdict.action if verdict.action in (Action.RESET_GPU, Action.REBOOT) else None
    if rung is None and remediator.takes_out(verdict):
        rung = max((r.action for r in verdict.reasons if r.action in (Action.RESET_GPU, Action.REBOOT)), default=None)
    if rung is None:
        return []
    kind = "reboot" if rung == Action.REBOOT else "reset_gpu"
    recent = [r for r in row.repairs if r[1] in ("reboot", "reset_gpu") and t_s - float(r[0]) < FIX_HOLD_S]
    if recent:
        return []
    if driver is None:
        return [f"{kind} {node.name} left to the operator (no fleet driver)"]
    if kind == "reboot":
        rid = f"health/{node.name}/reboot/{t_s:.0f}"
        op = driver.reboot(node.name, request_id=rid)
        node_evidence.record_repair(row, t_s, "reboot", None, verdict.summary())
        done = [f"reboot {node.name}"]
    else:
        done, op = [], None
        for gpu in _gpus_of(verdict, Action.RESET_GPU) or [0]:
            rid = f"health/{node.name}/reset/gpu{gpu}/{t_s:.0f}"
            op = driver.reset_gpu(node.name, gpu, request_id=rid)
            node_evidence.record_repair(row, t_s, "reset_gpu", gpu, verdict.summary())
            done.append(f"reset {node.name} gpu{gpu}")
    if op is not None and not op.done:
        row.pending_ops = [*row.pending_ops, [op.request_id, kind]]
    return done


def _release_repaired(
    session: orm.Session, node: models.Node, row: models_cloud.NodeEvidence, verdict: Verdict
) -> list[str]:
    """A quarantined node out of every cluster, fixed and clean again, goes back to burn-in."""
    if (
        node.fleet_stage != states.QUARANTINED
        or node.cluster_id is not None
        or node.provisioning_state != states.AVAILABLE
        or verdict.action > Action.RESTART_APP
        or row.pending_ops
        or not any(r[1] in ("reboot", "reset_gpu") for r in row.repairs)
    ):
        return []
    move(session, node, states.BURN_IN, actor=ACTOR, reason="fixed (reset/reboot) and clean again: burn-in")
    row.held_action = None
    return [f"burn-in {node.name}"]


def handle(
    session: orm.Session,
    node: models.Node,
    judgement: node_evidence.Judgement,
    driver: base.Driver | None = None,
    scheduler: SchedulerSeam | None = None,
    replica_leases: leases.Fence | None = None,
) -> list[str]:
    """Carry the server's verdict out for ``node`` (a row of the session; see the module docstring). The
    caller commits. Returns what was done, in order. ``scheduler``: the seam of the node's cluster's own
    scheduler, where one was delivered (drains go there too). ``replica_leases``: this replica's reconcile leases
    (``velyrix server --fleet-driver`` on PostgreSQL; ``leases.NO_LEASE`` for a server without a fleet driver
    there): a replacement is written only under the cluster's lease."""
    verdict = judgement.verdict
    row = node_evidence.evidence_row(session, node)
    t_s = row.last_t_s or 0.0
    _poll_pending(driver, row)
    cluster = session.get(models.Cluster, node.cluster_id) if node.cluster_id else None
    if remediator.takes_out(verdict) and node.fleet_stage == states.PRODUCTION:
        node.last_error = f"health: {verdict.summary()}"[:2000]
    seam = ClusterEventSeam(cluster, scheduler)
    runner = remediator.Remediator(
        seam=seam,
        nodes={node.name: node},
        replacer=_replacer(session, cluster, verdict, t_s, replica_leases),
        store=DbTransitionStore(session),
    )
    held = node_evidence.held(row)
    if held is not None:
        runner.held[node.name] = held
    done = runner.handle(verdict)
    stays = cluster is not None and not remediator.takes_out(verdict)  # one taken out leaves, spare or not
    done.extend(seam.forward_reboots({node.name} if stays else set()))
    now_held = runner.held.get(node.name)
    row.held_action = now_held.name if now_held is not None else None
    for op in done:
        kind = op.split()[0]
        if kind in ("drain", "quarantine", "rma"):
            node_evidence.record_repair(row, t_s, kind, None, verdict.summary())
    done.extend(_fix(driver, node, row, verdict, t_s))
    done.extend(_release_repaired(session, node, row, verdict))
    degradation.track(session, node, verdict.level, verdict.summary(), clock.now())
    provider_actions.record_automatic(session, node, cluster, done, verdict.summary())
    for rma in runner.rma:
        session.add(
            models.RmaRecord(
                tenant_id=None,
                node_id=node.id,
                node_name=node.name,
                serial=StoredHardware.from_dict(node.hardware).serial,
                reasons=list(rma.reasons),
                summary=rma.summary,
            )
        )
    if done:
        node_evidence.add_event(
            session,
            node,
            t_s,
            "HealthAction",
            f"{verdict.action.name} ({verdict.level}: {verdict.summary()}): " + "; ".join(done),
            kind="Warning" if verdict.action >= Action.RESET_GPU else "Normal",
            agent_action=judgement.claimed.action.name if judgement.claimed else None,
            server_action=verdict.action.name,
        )
    elif judgement.new_findings:  # a rung left to the node (RESTART_APP), or one held: recorded as seen
        found = [r for r in verdict.reasons if r.key in judgement.new_findings]
        node_evidence.add_event(
            session,
            node,
            t_s,
            "HealthFinding",
            f"{verdict.action.name}: " + "; ".join(f"{r.key} {r.message}" for r in found),
            server_action=verdict.action.name,
        )
    session.flush()
    return done


def _fence_of(session: orm.Session, fleet: Any) -> leases.Fence | None:
    """What a heal from a report handled here is fenced by: this replica's leases (``velyrix server
    --fleet-driver`` on PostgreSQL); ``leases.NO_LEASE`` for a process without a fleet runtime on PostgreSQL
    (it reconciles nothing, so the replica holding the cluster's lease replaces the node); None for one
    process alone (SQLite, or ``velyrix up``, whose reconciler takes no leases): unfenced."""
    held: leases.Fence | None = getattr(getattr(fleet, "reconciler", None), "leases", None)
    if held is None and fleet is None and session.get_bind().dialect.name == "postgresql":
        return leases.NO_LEASE
    return held


def install(app: FastAPI) -> FastAPI:
    """Compose the remediation into a control-plane app (``app.state.report_handler``; the fleet driver is
    the one of ``app.state.fleet`` when a runtime is attached); returns ``app``."""

    def handler(session: orm.Session, node: models.Node, judgement: node_evidence.Judgement) -> list[str]:
        fleet = getattr(app.state, "fleet", None)
        schedulers = getattr(app.state, "schedulers", None)  # ``velyrix up --slurm``: twin_delivery.TwinSchedulers
        seam = schedulers.seam(node.cluster_id) if schedulers is not None and node.cluster_id else None
        return handle(session, node, judgement, getattr(fleet, "driver", None), seam, _fence_of(session, fleet))

    app.state.report_handler = handler
    return app
