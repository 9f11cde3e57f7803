"""The event loop of a training job on the twin: the twin's clock, its faults, the health loop, the job.

Every ``poll_s`` simulated seconds the twin advances (spontaneous faults at the catalog's rates, with
their precursors), the job runs up to each new fault in time order, and the health loop decides drains;
a drained node is swapped for a spare through the scheduler seam (``placement``) and repaired. A fault
that crashes the job stops it (work since the last complete checkpoint is lost) and the job restarts:
detect, wait for replacements, reschedule, reload the checkpoint from the tier.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from velyrix import catalog, errors
from velyrix.catalog import faults as catalog_faults
from velyrix.fleet.drivers.sim import SimClock, SimRegion
from velyrix.fleet.drivers.sim.faults import Fault
from velyrix.fleet.drivers.sim.region import SimEvent
from velyrix.ops.scheduler.clusters import SchedulerCluster
from velyrix.ops.workload import health_loop
from velyrix.ops.workload.job import JobSpec
from velyrix.ops.workload.job_state import JobState
from velyrix.ops.workload.placement import JobScheduler, TwinPool
from velyrix.ops.workload.tier import Neighbours, TwinTier

H = 3600.0


@dataclass(frozen=True)
class Injection:
    """A fault injected by hand: ``at_s`` simulated seconds in, on the job's ``node``-th node."""

    at_s: float
    fault: Fault
    node: int = 0
    precursor_s: float = 0.0


@dataclass(frozen=True)
class RunConfig:
    """One run: seed, simulated days, health policy, and the hand-injected faults."""

    seed: int = 0
    days: float = 30.0
    policy: str = "proactive"
    injections: tuple[Injection, ...] = ()
    failure_rate: float | None = None

    def validate(self) -> None:
        if not (math.isfinite(self.days) and 0 < self.days <= 3650):
            raise errors.InvalidInputError(f"--days must be in (0, 3650], got {self.days}", hint="e.g. 30")
        if self.policy not in health_loop.POLICIES:
            raise errors.UnknownNameError("health policy", self.policy, health_loop.POLICIES)
        late = [i for i in self.injections if not 0 <= i.at_s < self.days * 86400.0]
        if late:
            raise errors.InvalidInputError(
                f"a fault injected at {late[0].at_s / 3600:g} h is outside the run of {self.days * 24:g} h",
                hint="inject within the run, or give more --days",
            )


@dataclass
class Run:
    """What a run produced: the job's state (figures), the timeline, and the twin's failures on job nodes."""

    job: JobSpec
    config: RunConfig
    state: JobState
    horizon_s: float
    failures: list[dict[str, Any]] = field(default_factory=list)
    drains: list[dict[str, Any]] = field(default_factory=list)
    scheduler: str = "twin"


class TrainingRun:
    """Runs ``job`` on a twin of ``cluster`` (its nodes, then the region's spare share) under ``config``."""

    def __init__(self, job: JobSpec, cluster: SchedulerCluster, config: RunConfig) -> None:
        config.validate()
        self.job, self.config = job, config
        self.horizon = config.days * 86400.0
        # the region's spare pool (its catalog capacity x spare fraction) is shared with every other cluster
        # of the region: their lasting failures borrow spares too (``_others``)
        spec = catalog.region(job.region)
        capacity = spec.capacity.get(job.node_type, len(cluster.node_names))
        spares = math.ceil(capacity * spec.spare_fraction)
        total = len(cluster.node_names) + spares
        self.region = SimRegion.build(job.region, {job.node_type: total}, seed=config.seed, clock=SimClock())
        self.region.enable_spontaneous(True, rate_per_1000_node_days=config.failure_rate)
        cfg = catalog.load_toml("twin_workload.toml")["health"]
        self.poll_s = float(cfg["poll_s"])
        self.report_s = float(cfg["report_s"])
        self.queue: list[tuple[float, int, Any]] = []
        self.order = itertools.count()
        self.repair_s = float(cfg["repair_h"]) * H
        self.scheduler: JobScheduler = TwinPool(cluster, list(self.region.nodes))
        self.hosts = self.scheduler.start(job.nodes)
        self.health = health_loop.HealthLoop(config.policy, self.region, self.poll_s)
        self.tier = TwinTier(job, Neighbours.draw(config.seed, self.horizon))
        self.state = JobState(job, self.tier, self._on_commit)
        self.pending: set[str] = set()
        self.out = Run(job, config, self.state, self.horizon, scheduler=self.scheduler.name)
        self.others = _other_clusters_draws(config, max(0, capacity - total), self.horizon)
        self._speed()

    # --- the loop --------------------------------------------------------------------------------
    def run(self) -> Run:
        t, seen = 0.0, 0
        todo = sorted(self.config.injections, key=lambda i: i.at_s)
        while t < self.horizon - 1e-9:
            t_next = min(t + self.poll_s, self.horizon)
            while todo and todo[0].at_s < t_next:
                self._inject(todo.pop(0))
            self.region.advance(t_next - self.region.clock.now())
            touched = {e.hostname for e in self.region.events[seen:]}
            for event in self.region.events[seen:]:
                heapq.heappush(self.queue, (event.at_s, next(self.order), event))
            seen = len(self.region.events)
            while self.queue and self.queue[0][0] <= t_next:
                at, _, item = heapq.heappop(self.queue)
                self.state.run_until(max(at, self.state.t))
                if isinstance(item, SimEvent):
                    self._event(item)
                else:
                    self._decide(item, at)
            self.state.run_until(t_next)
            for host in self.scheduler.returned(t_next):
                self.region.repair(host)
                self.health.repaired(host, t_next)
            while self.others and self.others[0] <= t_next:
                self.scheduler.retire(None, self.others.pop(0) + self.repair_s)
            for decision in self.health.poll(t_next, touched, self._in_service()):
                self._decide(decision, t_next)
            t = t_next
        return self.out

    def _in_service(self) -> set[str]:
        return set(self.hosts) | set(self.scheduler.in_pool())

    def _inject(self, inj: Injection) -> None:
        if not 0 <= inj.node < len(self.hosts):
            raise errors.InvalidInputError(
                f"no job node {inj.node}: the job has {len(self.hosts)} (0-{len(self.hosts) - 1})"
            )
        self.region.advance(max(0.0, inj.at_s - self.region.clock.now()))
        self.region.inject(self.hosts[inj.node], inj.fault, precursor_s=inj.precursor_s, cause="injected")

    def _speed(self) -> None:
        """The job steps at the pace of its slowest GPU and its slowest rail (the all-reduce ring)."""
        worst = 1.0
        for host in self.hosts:
            node = self.region.nodes[host]
            gpu = min((g.compute_factor for g in node.gpus if g.responsive), default=0.0)
            rails = sum(1 for p in node.ib_ports if p.state == "ACTIVE") / max(1, len(node.ib_ports))
            worst = min(worst, gpu, rails)
        self.state.speed = max(worst, 1e-6)

    def _event(self, event: SimEvent) -> None:
        host = event.hostname
        record = {
            "t_s": event.at_s,
            "host": self.scheduler.label(host),
            "kind": event.kind,
            "fault": event.fault.kind if event.fault.kind != "xid" else f"xid {event.fault.xid}",
            "cause": event.cause,
            "in_job": host in self.hosts,
        }
        if event.kind == "precursor":
            record["due_s"] = event.due_s
            self.out.failures.append(record)
            return
        self.health.on_fault(host, event.fault)
        report = self.health.report(host) if host in self._in_service() else None
        if report is not None:
            heapq.heappush(self.queue, (event.at_s + self.report_s, next(self.order), report))
        if host in self.hosts:
            if health_loop.crashes_job(event.fault):
                record["lost_work_s"] = self.state.stop(
                    event.at_s, planned=False, reason=f"{record['fault']} on {record['host']}"
                )
                record["phase"] = (
                    "restart" if self.state.restart and self.state.restart.started_s < event.at_s else "running"
                )
            else:
                self._speed()
                record["slowed_to"] = self.state.speed
        self.out.failures.append(record)

    # --- drains ----------------------------------------------------------------------------------
    def _decide(self, d: health_loop.Decision, t: float) -> None:
        self.out.drains.append(
            {
                "t_s": t,
                "host": self.scheduler.label(d.host),
                "when": d.when,
                "reason": d.reason,
                "precursor": d.precursor,
                "in_job": d.host in self.hosts,
            }
        )
        if d.host not in self.hosts:  # a spare in the pool: out for repair
            if self.scheduler.retire(d.host, t + self.repair_s) is not None:
                self.region.repair(d.host)
                self.health.repaired(d.host, t)
            return
        if d.when == "after_checkpoint":
            self.pending.add(d.host)
            return
        if self.state.phase != "restart":
            self.state.stop(t, planned=True, reason=f"drain {self.scheduler.label(d.host)}: {d.reason}")
        self._replace(d.host, t)

    def _replace(self, host: str, t: float) -> None:
        rep = self.scheduler.replace(host, t, t + self.repair_s)
        self.region.repair(host)
        self.health.repaired(host, t)
        self.hosts[self.hosts.index(host)] = rep.host
        self.pending.discard(host)
        self.state.wait_for(rep.ready_s)
        self.state.log.append(
            {
                "t_s": t,
                "kind": "replacement",
                "out": self.scheduler.label(host),
                "in": self.scheduler.label(rep.host),
                "ready_s": rep.ready_s,
            }
        )
        self._speed()

    def _on_commit(self, t: float) -> None:
        """After each complete checkpoint: nodes waiting for one leave now (the job stops there)."""
        waiting = sorted(h for h in self.pending if h in self.hosts)
        self.pending.clear()
        if not waiting:
            return
        labels = ", ".join(self.scheduler.label(h) for h in waiting)
        self.state.stop(t, planned=True, reason=f"drain after the checkpoint: {labels}")
        for host in waiting:
            self._replace(host, t)


def _other_clusters_draws(config: RunConfig, nodes: int, horizon_s: float) -> list[float]:
    """When the region's other ``nodes`` (other tenants' clusters) take a spare: their lasting failures, at
    the same failure rate and cause mix as the twin's (seeded apart from the twin's own faults)."""
    rates = catalog.failure_rates()
    per_day = (config.failure_rate or rates.default) / 1000.0 * nodes
    lasting_share = sum(c.share for c in rates.causes if health_loop.lasting(_cause_fault(c.name)))
    lasting_share /= sum(c.share for c in rates.causes) or 1.0
    rng = np.random.default_rng([config.seed, 11])
    count = int(rng.poisson(per_day * lasting_share * horizon_s / 86400.0))
    return sorted(float(x) for x in rng.uniform(0.0, horizon_s, count))


def _cause_fault(cause: str) -> Fault:
    chosen = catalog_faults.cause_fault(cause)
    return Fault(kind=chosen.kind, xid=chosen.xid)


def run(job: JobSpec, cluster: SchedulerCluster, config: RunConfig) -> Run:
    """Run ``job`` on a fresh twin of ``cluster`` (seeded by ``config.seed``) and return the ``Run``."""
    return TrainingRun(job, cluster, config).run()
