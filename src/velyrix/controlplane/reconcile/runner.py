"""The reconcile loop: which clusters to look at, claims between replicas, timeouts, temporary errors.

Each cluster is reconciled in its own transaction under a PostgreSQL advisory lock on its id
(``locks.try_claim``): a replica that cannot take it skips it this pass, so replicas never act on the same
cluster at once. Errors are temporary (a concurrent update, a lost connection: retried after a delay and
recorded in ``cluster_work.last_error``) or permanent (settled in the cluster's phase by the step itself).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import cluster as cluster_mod
from velyrix.controlplane.reconcile import enrollment, leases, locks, node_entry, phases
from velyrix.controlplane.reconcile.scheduler_service import SchedulerService
from velyrix.fleet.drivers import base

log = logging.getLogger("velyrix.reconcile")
TEMPORARY = (
    sa_exc.OperationalError,
    sa_exc.IntegrityError,
    orm.exc.StaleDataError,
    sa_exc.InterfaceError,
    sa_exc.PendingRollbackError,  # an earlier flush in the pass lost a race (StaleDataError): retry it whole
)


class Reconciler:
    """Reconciles the clusters of one region on one driver. ``run_once`` is one pass; ``run`` loops."""

    def __init__(
        self,
        sessionmaker: orm.sessionmaker[orm.Session],
        driver: base.Driver,
        region: str,
        settings: phases.ReconcileSettings | None = None,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.driver = driver
        self.region = region
        self.settings = settings or phases.ReconcileSettings()
        self._not_before: dict[str, float] = {}
        self.errors = 0
        self.scheduler: SchedulerService | None = None
        """Who delivers the clusters' schedulers (``reconcile.scheduler``); None: nobody (conditions say so)."""
        self.before_commit: Callable[[], None] | None = None
        """Called after the driver acted and before the transaction commits (the twin saves its state here,
        so the hardware is never behind the database after a crash)."""
        self.leases: leases.Leases | None = None
        """Set on PostgreSQL replicas (``velyrix server --fleet-driver``): ``run_once`` reconciles only the
        clusters of the shards this replica holds, and every commit is fenced by the lease's epoch."""

    def intake(self) -> int:
        """One fleet intake pass (enrolled -> inspected -> burned in); returns requests still pending (0 also
        when another replica runs the intake: with ``leases``, only the holder of ``leases.intake_key``'s
        shard runs it, and its pass commits only under the fence, like a cluster's step)."""
        key = leases.intake_key(self.region)
        if self.leases is not None:
            self.leases.refresh()
            if not self.leases.owns(key):
                return 0
        try:
            with self.sessionmaker() as s:
                if not locks.try_claim(s, key):
                    return 0
                waiting = enrollment.reconcile_fleet(s, self.driver, self.region)
                if self.leases is not None:
                    self.leases.fence(s, key)  # LeaseLost: roll back, the new holder runs the pass
                if self.before_commit is not None:
                    self.before_commit()
                s.commit()
                return waiting
        except leases.LeaseLost as exc:
            log.info("intake of %s: not committed, %s", self.region, exc)
            return 0
        except errors.VelyrixError as exc:  # the driver could not answer: rolled back, asked again next pass
            self.errors += 1
            log.warning("intake of %s: not committed, the driver did not answer: %s", self.region, exc.message)
            return 0

    def run_once(self) -> float:
        """Reconcile every cluster that is due; returns how long the loop may sleep (wall s)."""
        now = time.monotonic()
        if self.leases is not None:
            self.leases.refresh()  # the heartbeat too: a replica with no cluster yet still counts
        with self.sessionmaker() as s:
            verdicts = cluster_mod.settled_in(s, self.region)  # one statement for the whole region
        sleep = self.settings.idle_s
        for cid, settled in verdicts.items():
            if self.leases is not None:
                self.leases.refresh()  # at most every lease_s / 4
                if not self.leases.owns(cid):
                    continue
            due = self._not_before.get(cid, 0.0)
            if due > now:
                sleep = min(sleep, due - now)
                continue
            again = None if settled else self.reconcile_one(cid)
            wait = self.settings.idle_s if again is None else again
            self._not_before[cid] = time.monotonic() + wait
            sleep = min(sleep, wait)
        return max(0.0, sleep)

    def reconcile_one(self, cluster_id: str) -> float | None:
        """One step of one cluster in its own transaction; returns when to look again (None: settled)."""
        try:
            with self.sessionmaker() as s:
                if not locks.try_claim(s, f"cluster/{cluster_id}"):
                    return self.settings.poll_s
                if cluster_mod.settled(s, cluster_id):  # one statement, whatever the cluster's size
                    return None
                cluster = s.get(models.Cluster, cluster_id)
                if cluster is None:
                    return None
                self._check_timeout(s, cluster)
                again = cluster_mod.reconcile(s, cluster, self.driver, self.settings, scheduler=self.scheduler)
                if self.leases is not None:
                    self.leases.fence(s, cluster_id)  # LeaseLost: roll back, the new holder does it
                if self.before_commit is not None:
                    self.before_commit()
                s.commit()
                return again
        except leases.LeaseLost as exc:
            log.info("cluster %s: not committed, %s", cluster_id, exc)
            return self.settings.poll_s
        except TEMPORARY as exc:
            self.errors += 1
            log.info("cluster %s: temporary error, retrying: %s", cluster_id, exc.__class__.__name__)
            self._record_error(cluster_id, f"{exc.__class__.__name__}: {str(exc)[:300]}")
            return self.settings.retry_backoff_s
        except errors.VelyrixError as exc:
            self.errors += 1
            log.warning("cluster %s: %s", cluster_id, exc.message)
            self._record_error(cluster_id, exc.message)
            return self.settings.retry_backoff_s

    def _check_timeout(self, s: orm.Session, cluster: models.Cluster) -> None:
        if cluster.phase not in phases.ACTIVE_PHASES or cluster.desired_state == "absent":
            return
        work = s.scalar(sa.select(models.ClusterWork).where(models.ClusterWork.cluster_id == cluster.id))
        if work is None:
            return
        started = work.phase_started_at
        if started.tzinfo is None:
            started = started.replace(tzinfo=dt.UTC)
        age = (models.utcnow() - started).total_seconds()
        if age > self.settings.phase_timeout_s:
            st = cluster_mod.Step(
                session=s,
                cluster=cluster,
                work=work,
                driver=self.driver,
                settings=self.settings,
                entries=node_entry.fetch(s, cluster.id),
            )
            cluster_mod.fail(
                st,
                "PhaseTimeout",
                f"phase {cluster.phase} took longer than "
                f"{self.settings.phase_timeout_s:g} s"
                + (f"; last error: {work.last_error}" if work.last_error else ""),
            )

    def _record_error(self, cluster_id: str, message: str) -> None:
        """Record the error of a step in ``cluster_work``, fenced by the cluster's lease like the step itself
        (a replica whose lease moved leaves the cluster's record to the new holder)."""
        try:
            with self.sessionmaker() as s:
                work = s.scalar(sa.select(models.ClusterWork).where(models.ClusterWork.cluster_id == cluster_id))
                if work is not None:
                    work.last_error = message[:2000]
                    work.retries += 1
                    if self.leases is not None:
                        self.leases.fence(s, cluster_id)
                    s.commit()
        except leases.LeaseLost as exc:
            log.info("cluster %s: error not recorded, %s", cluster_id, exc)
        except TEMPORARY:
            pass

    def settle(self, timeout_s: float = 60.0, tick: float | None = None) -> None:
        """Run passes until no cluster has work left (tests, benchmarks, the demo); ``tick`` advances a
        simulated clock by that many seconds between passes where the driver has one."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._not_before.clear()
            with self.sessionmaker() as s:
                rows = s.execute(
                    sa.select(models.Cluster, models.ClusterWork)
                    .outerjoin(models.ClusterWork, models.ClusterWork.cluster_id == models.Cluster.id)
                    .where(models.Cluster.region == self.region)
                ).all()
                busy = [c.id for c, w in rows if cluster_mod.needs_work(c, w, s)]
            if not busy:
                return
            for cid in busy:
                self.reconcile_one(cid)
            if tick:
                advance = getattr(getattr(self.driver, "region", None), "advance", None)
                if advance is not None:
                    advance(tick)
        raise TimeoutError(f"clusters still busy after {timeout_s} s")

    def run(self, stop: threading.Event) -> None:
        """Loop until ``stop`` is set: intake, then clusters."""
        while not stop.is_set():
            try:  # intake and clusters apart: a failed intake pass never holds clusters back
                self.intake()
            except Exception:
                log.exception("intake pass failed")
            try:
                sleep = self.run_once()
            except Exception:
                log.exception("reconcile pass failed")
                sleep = self.settings.idle_s
            stop.wait(sleep)
