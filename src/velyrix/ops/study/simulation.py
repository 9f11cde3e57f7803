"""One policy on the twin for the health evaluation: faults, precursors, jobs, verdicts and removals.

See ``velyrix.ops.study.evaluation`` for the policies and what is counted.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from velyrix.agent.checks import convert
from velyrix.agent.collectors.sim import read_node
from velyrix.catalog import health as catalog_health
from velyrix.fleet.drivers.sim import Fault, SimRegion
from velyrix.health import evidence as ev
from velyrix.health.engine import Engine
from velyrix.health.ladder import Action, Level
from velyrix.ops.study.workload import EvalConfig, H, Jobs, lasting, noise_events


@dataclass
class _Node:
    samples: deque = field(default_factory=lambda: deque(maxlen=96))
    xids: list = field(default_factory=list)
    xid_seen: float = -1.0
    repairs: list = field(default_factory=list)
    out_until: float = -1.0
    fix_kind: str = ""  # what happens at return: part_swap (repair) or reboot (diag/reset)
    open_fault_s: float | None = None
    pending: tuple[float, float] | None = None  # precursor (start, fault time)
    last_action: Action = Action.IGNORE
    known: ev.CounterSample | None = None  # the last reading; unchanged until the node is touched


@dataclass
class _Stats:
    job_interruptions: int = 0
    precursor_job_interruptions: int = 0
    repeat_interruptions: int = 0
    failures: int = 0
    precursor_failures: int = 0
    failures_caught_before_job_damage: int = 0
    lead_times_h: list = field(default_factory=list)
    planned_requeues: int = 0
    false_drains: int = 0
    false_quarantines: int = 0
    spares_used: int = 0
    gpu_hours_lost: float = 0.0
    node_hours_out_of_service: float = 0.0
    precursor_interruptions_by_kind: dict = field(default_factory=dict)
    false_drain_reasons: dict = field(default_factory=dict)


class PolicyRun:
    """One policy over the whole simulated period; ``run()`` returns its figures."""

    def __init__(self, policy: str, cfg: EvalConfig) -> None:
        self.policy, self.cfg = policy, cfg
        self.region = SimRegion.build(cfg.region, {cfg.node_type: cfg.nodes}, seed=cfg.seed)
        self.region.enable_spontaneous(
            True, precursor_window_s=None if cfg.precursor_h is None else cfg.precursor_h * H
        )
        self.hosts = list(self.region.nodes)
        self.index = {h: i for i, h in enumerate(self.hosts)}
        for node in self.region.nodes.values():
            node.load_pct = cfg.load_pct
        self.jobs = Jobs(cfg, np.random.default_rng([cfg.seed, 1]))
        self.noise = noise_events(cfg, np.random.default_rng([cfg.seed, 2]))
        self.state = {h: _Node() for h in self.hosts}
        self.stats = _Stats()
        self.engine = Engine()
        fatal = {c for c in catalog_health.xid_codes() if catalog_health.xid(c).level == "fatal"}
        self.fatal_xids = fatal
        if policy == "proactive":
            for host, node in self.region.nodes.items():
                self.state[host].known = convert.counter_sample(read_node(node), 0.0)

    # --- accounting ------------------------------------------------------------------------------
    def _lose(self, host: str, t: float, start: float, *, planned_at_checkpoint: bool = False) -> None:
        """Work lost by the job on ``host`` stopped at ``t``: since its last checkpoint, plus the restart."""
        c = self.cfg.checkpoint_interval_h * H
        since_ckpt = 0.0 if planned_at_checkpoint else (t - start) - math.floor((t - start) / c) * c
        self.stats.gpu_hours_lost += self.jobs.job_gpus(self.index[host], start) * (since_ckpt / H + self.cfg.restart_h)

    def _remove(self, host: str, t: float, hours: float, fix_kind: str) -> None:
        st = self.state[host]
        if st.open_fault_s is not None:  # jobs that started on the broken node before it left crashed
            repeats = self.jobs.starts_between_gpus(self.index[host], st.open_fault_s, t)
            self.stats.repeat_interruptions += len(repeats)
            self.stats.job_interruptions += len(repeats)
            self.stats.gpu_hours_lost += sum(repeats) * self.cfg.restart_h
            st.open_fault_s = None
        st.out_until, st.fix_kind = t + hours * H, fix_kind
        self.stats.node_hours_out_of_service += hours
        if hours >= self.cfg.repair_h:
            self.stats.spares_used += 1
        if fix_kind == "part_swap":
            self.region.repair(host)
            st.pending = None

    # --- the loop --------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg, steps = self.cfg, int(math.ceil(self.cfg.days * 86400.0 / self.cfg.poll_s))
        t, ev_i, noise_i = 0.0, 0, 0
        for _ in range(steps):
            t_next = t + cfg.poll_s
            touched_noise: set[str] = set()
            for host, st in self.state.items():
                if 0 <= st.out_until <= t:
                    self._return(host, st, t)
            while noise_i < len(self.noise) and self.noise[noise_i][0] < t_next:
                _, i, fault = self.noise[noise_i]
                noise_i += 1
                if self.state[self.hosts[i]].out_until >= 0:
                    continue
                if isinstance(fault, Fault):
                    self.region.inject(self.hosts[i], fault)
                else:  # a link retrains once: counters move, the port stays up
                    port = self.region.nodes[self.hosts[i]].ib_ports[i % 8]
                    port.counters["link_downed"] += 1
                    port.counters["symbol_error"] += 40
                    touched_noise.add(self.hosts[i])
            self.region.advance(cfg.poll_s)
            t = t_next
            touched = set(touched_noise)
            for event in self.region.events[ev_i:]:
                touched.add(event.hostname)
                self._event(event)
            ev_i = len(self.region.events)
            self._respond(t, touched)
        return self._report()

    def _return(self, host: str, st: _Node, t: float) -> None:
        st.out_until = -1.0
        st.repairs.append(ev.RepairEvent(t, st.fix_kind))
        st.samples.clear()
        if self.policy == "proactive":
            st.known = convert.counter_sample(read_node(self.region.nodes[host]), t)
        if st.fix_kind == "part_swap":
            st.xids.clear()
        st.last_action = Action.IGNORE

    def _event(self, event) -> None:  # a SimEvent
        host, st = event.hostname, self.state[event.hostname]
        if event.kind == "precursor":
            st.pending = (event.at_s, event.at_s + self.region.precursor_window_s)
            self.stats.precursor_failures += 1
            return
        if event.cause is None and event.fault.kind in ("xid", "ecc_sbe_storm") and st.pending is None:
            return  # injected benign noise, not a failure
        self.stats.failures += 1
        if st.out_until >= 0:
            return  # out of service: no job, repaired on return
        had_precursor = st.pending is not None and abs(st.pending[1] - event.at_s) < 1.0
        if had_precursor:
            st.pending = None
        busy, start, _ = self.jobs.at(self.index[host], event.at_s)
        if busy:
            self.stats.job_interruptions += 1
            self.stats.precursor_job_interruptions += int(had_precursor)
            if had_precursor:
                by_kind = self.stats.precursor_interruptions_by_kind
                by_kind[event.fault.kind] = by_kind.get(event.fault.kind, 0) + 1
            self._lose(host, event.at_s, start)
        if lasting(event.fault):
            st.open_fault_s = event.at_s
        elif self.policy == "reactive" and event.fault.xid in self.fatal_xids:
            self._remove(host, event.at_s, self.cfg.reboot_h, "reboot")

    def _respond(self, t: float, touched: set[str]) -> None:
        cfg = self.cfg
        for host, st in self.state.items():
            if st.out_until >= 0 or st.open_fault_s is None:
                continue
            if self.policy == "none" and t - st.open_fault_s >= cfg.notice_h * H:
                self._remove(host, t, cfg.repair_h, "part_swap")
            elif self.policy == "reactive":
                self._remove(host, t, cfg.repair_h, "part_swap")
        if self.policy != "proactive":
            return
        candidates = (
            touched
            | {tr.hostname for tr in self.region.trends}
            | {h for h, s in self.state.items() if s.last_action > Action.IGNORE or s.open_fault_s is not None}
        )
        for host in sorted(candidates):
            st = self.state[host]
            if st.out_until >= 0:
                continue
            sample = read_node(self.region.nodes[host])
            if st.known is not None and (not st.samples or st.samples[-1].t_s < t - self.cfg.poll_s):
                # the twin changes a node's counters only through its events and trends: since the node was
                # last judged, every poll would have read the last known values. That flat stretch is kept
                # as a few points (every 6 h of the last day, and the previous poll): fast, and for the
                # trend rules the same as a sample at every poll
                last = st.samples[-1].t_s if st.samples else float("-inf")
                for at in sorted({t - h * H for h in (24, 18, 12, 6)} | {t - self.cfg.poll_s}):
                    if at <= last:
                        continue
                    st.samples.append(ev.CounterSample(at, st.known.gpus, st.known.ib_ports, st.known.nvme))
            st.samples.append(convert.counter_sample(sample, t))
            st.known = st.samples[-1]
            new = [x for x in convert.xid_events(sample) if x.t_s > st.xid_seen]
            if new:
                st.xids.extend(new)
                st.xid_seen = max(x.t_s for x in new)
            verdict = self.engine.evaluate(
                ev.Evidence(host, t, tuple(st.xids), tuple(st.samples), (), tuple(st.repairs))
            )
            st.last_action = verdict.action
            self._act(host, st, t, verdict)

    def _act(self, host: str, st: _Node, t: float, verdict) -> None:
        cfg, action = self.cfg, verdict.action
        if action < Action.RESET_GPU or (action < Action.DRAIN_AFTER_JOB and verdict.level < Level.FATAL):
            return
        broken = st.open_fault_s is not None
        real = broken or st.pending is not None
        busy, start, end = self.jobs.at(self.index[host], t)
        st.repairs.append(ev.RepairEvent(t, "drain", reason=verdict.summary()))
        if action < Action.DRAIN_AFTER_JOB:  # fatal XID: reset or reboot now
            self._remove(host, t, cfg.repair_h if broken else cfg.reboot_h, "part_swap" if broken else "reboot")
            return
        leave = t
        if busy and not broken:
            if action == Action.DRAIN_AFTER_JOB:
                leave = min(end, t + cfg.checkpoint_interval_h * H)
                self.stats.planned_requeues += int(leave < end)
                self._lose(host, leave, start, planned_at_checkpoint=True)
            else:
                self.stats.planned_requeues += 1
                self._lose(host, t, start)
        if st.pending is not None:
            if st.pending[1] <= leave:
                st.last_action = Action.IGNORE  # too late: the failure will hit the job
                st.repairs.pop()
                return
            self.stats.failures_caught_before_job_damage += 1
            self.stats.lead_times_h.append((st.pending[1] - t) / H)
        if not real:
            self.stats.false_drains += 1
            self.stats.false_quarantines += int(action >= Action.QUARANTINE)
            top = verdict.reasons[0].key.split(":")[0]
            self.stats.false_drain_reasons[top] = self.stats.false_drain_reasons.get(top, 0) + 1
        hours = cfg.repair_h if (real or action >= Action.QUARANTINE) else cfg.diag_h
        self._remove(host, leave, hours + (leave - t) / H, "part_swap" if real else "reboot")

    def _report(self) -> dict[str, Any]:
        s = self.stats
        months = self.cfg.days / 30.0
        return {
            "job_interruptions": s.job_interruptions,
            "precursor_job_interruptions": s.precursor_job_interruptions,
            "repeat_interruptions": s.repeat_interruptions,
            "failures": s.failures + s.failures_caught_before_job_damage,
            "precursor_failures": s.precursor_failures,
            "failures_caught_before_job_damage": s.failures_caught_before_job_damage,
            "mean_lead_time_h": round(float(np.mean(s.lead_times_h)), 2) if s.lead_times_h else 0.0,
            "planned_requeues": s.planned_requeues,
            "false_drains": s.false_drains,
            "false_quarantines": s.false_quarantines,
            "false_quarantines_pct_nodes_per_month": round(100.0 * s.false_quarantines / self.cfg.nodes / months, 3),
            "spares_used": s.spares_used,
            "gpu_hours_lost": round(s.gpu_hours_lost, 1),
            "node_hours_out_of_service": round(s.node_hours_out_of_service, 1),
            "precursor_interruptions_by_kind": dict(sorted(s.precursor_interruptions_by_kind.items())),
            "false_drain_reasons": dict(sorted(s.false_drain_reasons.items())),
        }
