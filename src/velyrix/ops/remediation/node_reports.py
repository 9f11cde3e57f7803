"""Health verdicts reported by node agents, carried out on the control plane's database.

The control plane stores each report (``velyrix.controlplane.node_health``) and hands a verdict of
DRAIN_NOW or worse to ``handle``, which runs ``velyrix.ops.remediation.remediator.Remediator`` on the node's row:

- drains go to ``ClusterEventSeam`` (recorded as Warning events of the node's cluster; a tenant's scheduler
  follows the node's stage, the Slurm seam lives with the scheduler);
- QUARANTINE and up: the node's fleet stage moves to ``quarantined`` through ``fleet.transitions`` (recorded
  in ``node_transitions``), then the reconciler's own replacement path (``reconcile.cluster.heal``) takes a
  spare near it, so the cluster keeps its size and the replacement is provisioned and validated;
- no spare left: a NOC incident (``velyrix.ops.noc``, deduplicated per cluster) in the ``incidents`` table;
- an RMA criterion: an ``rma_records`` row with the evidence, and the node moves to ``rma``.

Everything happens in the report's transaction: the report, the moves, the replacement and the audit event
commit together or not at all.
"""

from __future__ import annotations

import itertools
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI
from sqlalchemy import orm

from velyrix.controlplane import status
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import cluster as cluster_mod
from velyrix.controlplane.reconcile.store import DbTransitionStore
from velyrix.fleet import states
from velyrix.health.drains import SchedulerSeam
from velyrix.health.engine import Verdict
from velyrix.health.ladder import Action
from velyrix.ops import noc
from velyrix.ops.remediation.remediator import Remediator


class ClusterEventSeam(SchedulerSeam):
    """A scheduler seam that records drains, undrains and reboots as events of the node's cluster."""

    def __init__(self, cluster: models.Cluster | None) -> None:
        self.cluster = cluster

    def _event(self, reason: str, message: str) -> None:
        if self.cluster is not None:
            status.add_event(self.cluster, reason, message, "Warning")

    def drain(self, node: str, reason: str, source: str) -> None:
        self._event("HealthDrain", f"{node} drained by {source}: {reason}")

    def undrain(self, node: str, source: str) -> None:
        self._event("HealthUndrain", f"{node} released by {source}")

    def reboot(self, node: str, reason: str) -> None:
        self._event("HealthReboot", f"{node} rebooted: {reason}")


def open_incident(session: orm.Session, cluster: models.Cluster, node: models.Node, detail: str) -> models.Incident:
    """Open (or extend) the capacity incident of ``cluster`` through ``noc.NocBook`` and keep it in the
    database: one open incident per cluster, P1 when more than ``noc.P1_FRACTION`` of its nodes are out."""
    key = f"capacity:{cluster.id}"
    rows = {
        r.number: r
        for r in session.scalars(
            sa.select(models.Incident).where(models.Incident.key == key, models.Incident.resolved_at.is_(None))
        )
    }
    taken = session.scalar(sa.select(sa.func.count()).select_from(models.Incident)) or 0
    book = noc.NocBook(
        incidents=[
            noc.Incident(
                r.number, r.key, r.priority, r.title, r.cluster_id, list(r.nodes), r.opened_at.timestamp(), r.detail
            )
            for r in rows.values()
        ],
        _ids=itertools.count(int(taken) + 1),
    )
    members = list(session.scalars(sa.select(models.Node).where(models.Node.cluster_id == cluster.id)))
    lost = sum(1 for m in members if m.fleet_stage != states.PRODUCTION)
    inc = book.open(
        key,
        noc.capacity_priority(lost, cluster.node_count),
        f"cluster {cluster.name} lost capacity: {lost} of {cluster.node_count} nodes out, no "
        f"{cluster.node_type} spare left",
        cluster=cluster.id,
        node=node.name,
        detail=detail,
    )
    row = rows.get(inc.id)
    if row is None:
        row = models.Incident(number=inc.id, key=key, tenant_id=cluster.tenant_id, cluster_id=cluster.id)
        session.add(row)
    row.priority, row.title, row.nodes, row.detail = inc.priority, inc.title, list(inc.nodes), inc.detail
    session.flush()
    return row


def handle(session: orm.Session, node: models.Node, verdict: Verdict, previous_action: str | None = None) -> list[str]:
    """Carry ``verdict`` out for ``node`` (a row of the session; see the module docstring). The caller
    commits. Returns what was done, in order."""
    cluster = session.get(models.Cluster, node.cluster_id) if node.cluster_id else None

    def replace(quarantined: Any) -> list[str]:
        if cluster is None:
            return []
        done = []
        for record in cluster_mod.heal(session, cluster):
            if record.get("replacement"):
                done.append(f"replace {record['failed']} with {record['replacement']} in {cluster.name}")
            else:
                inc = open_incident(session, cluster, quarantined, f"{record['failed']}: {record['reason']}")
                done.append(f"incident {inc.number} {inc.priority} {cluster.name}")
        return done

    if verdict.action >= Action.QUARANTINE:
        node.last_error = f"health: {verdict.summary()}"[:2000]
    remediator = Remediator(
        seam=ClusterEventSeam(cluster), nodes={node.name: node}, store=DbTransitionStore(session), replacer=replace
    )
    if previous_action and previous_action in Action.__members__ and Action[previous_action] >= Action.RESET_GPU:
        remediator.held[node.name] = Action[previous_action]
    done = remediator.handle(verdict)
    for rma in remediator.rma:
        session.add(
            models.RmaRecord(
                tenant_id=None,
                node_id=node.id,
                node_name=node.name,
                serial=(node.hardware or {}).get("serial"),
                reasons=list(rma.reasons),
                summary=rma.summary,
            )
        )
    session.flush()
    return done


def install(app: FastAPI) -> FastAPI:
    """Compose the remediation into a control-plane app (``app.state.report_handler``); returns ``app``."""
    app.state.report_handler = handle
    return app
