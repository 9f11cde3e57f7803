"""After a restart of the control plane: deliver again the schedulers recorded as running.

A cluster stays Ready across a restart, and the reconcilers do not run its Scheduler step again, but the
scheduler service of the process that ended took its daemons with it. ``Redelivery`` finds the clusters
whose ``scheduler_deliveries`` row says ``ready`` (and that are not being destroyed), sets their
``SchedulerReady`` condition false (reason ``Redelivering``) at once, then asks the service (``ensure``, same
cluster, same node names) in a background thread until each one is back, and records it the way the
Scheduler step does (``velyrix.controlplane.reconcile.scheduler``): the row's environment (a new
``SLURM_CONF``), the condition true again, an event ``SchedulerRedelivered``.
"""

from __future__ import annotations

import logging
import threading

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane import status
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import scheduler as tables
from velyrix.controlplane.reconcile.scheduler import CONDITION
from velyrix.controlplane.reconcile.scheduler_service import DELIVERING, READY, SchedulerService, Target

log = logging.getLogger("velyrix.scheduler.resume")

GONE_PHASES = ("Deleting", "Deleted", "Failed")
"""Phases whose recorded scheduler is not delivered again."""


def recorded(session: orm.Session) -> list[Target]:
    """The delivered schedulers to start again: one ``Target`` per cluster whose delivery is ``ready``."""
    rows = session.execute(
        sa.select(tables.SchedulerDelivery, models.Cluster)
        .join(models.Cluster, models.Cluster.id == tables.SchedulerDelivery.cluster_id)
        .where(tables.SchedulerDelivery.state == READY, models.Cluster.phase.not_in(GONE_PHASES))
        .order_by(models.Cluster.id)
    ).all()
    targets = []
    for row, cluster in rows:
        names = [str(n) for n in row.nodes]
        found = session.execute(sa.select(models.Node.name, models.Node.node_type).where(models.Node.name.in_(names)))
        types = {str(name): str(node_type) for name, node_type in found.all()}
        tenant = session.get(models.Tenant, cluster.tenant_id)
        targets.append(
            Target(
                cluster_id=cluster.id,
                name=cluster.name,
                tenant=tenant.name if tenant is not None else cluster.tenant_id,
                kind=row.kind,
                nodes={n: types[n] for n in names if n in types},
                fabric=cluster.spec.get("fabric"),
            )
        )
    return targets


class Redelivery:
    """Delivers ``recorded`` schedulers again through ``service`` (see the module doc); ``stop`` ends it."""

    def __init__(self, sessionmaker: orm.sessionmaker[orm.Session], service: SchedulerService) -> None:
        self.sessionmaker = sessionmaker
        self.service = service
        self.pending: dict[str, Target] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, every_s: float = 1.0) -> None:
        """Mark every recorded scheduler as being delivered again (committed before this returns), then
        follow them every ``every_s`` wall seconds in a thread until all are back."""
        with self.sessionmaker() as s:
            for t in recorded(s):
                cluster = s.get(models.Cluster, t.cluster_id)
                assert cluster is not None
                why = f"{t.kind} is being started again after a restart of the control plane"
                status.set_condition(cluster, CONDITION, False, "Redelivering", why)
                self.pending[t.cluster_id] = t
            s.commit()
        if self.pending:
            self._thread = threading.Thread(
                target=self._loop, args=(every_s,), name="velyrix-sched-resume", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def step(self) -> None:
        """Ask the service once for every pending cluster; record those no longer being delivered."""
        for cid, target in list(self.pending.items()):
            d = self.service.ensure(target)
            if d.state == DELIVERING:
                continue
            with self.sessionmaker() as s:
                row = s.scalar(sa.select(tables.SchedulerDelivery).where(tables.SchedulerDelivery.cluster_id == cid))
                cluster = s.get(models.Cluster, cid)
                if row is not None and cluster is not None:
                    row.state, row.message, row.env = d.state, d.message[:2000], dict(d.env)
                    ok = d.state == READY
                    status.set_condition(cluster, CONDITION, ok, "Delivered" if ok else "SchedulerFailed", d.message)
                    status.add_event(cluster, "SchedulerRedelivered" if ok else "SchedulerFailed", d.message)
                    s.commit()
            del self.pending[cid]

    def _loop(self, every_s: float) -> None:
        while self.pending and not self._stop.wait(every_s):
            try:
                self.step()
            except Exception as exc:  # the next round asks again
                log.warning("scheduler redelivery: %s", exc)
