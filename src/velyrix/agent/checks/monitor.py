"""The agent's passive health loop: every poll, read the node, judge it, act through the seam.

``HealthMonitor.poll()`` collects a ``NodeSample``, adds it (and new XIDs) to a sliding window of
evidence, asks the engine for a verdict and applies it (``velyrix.health.actions``). ``run()`` polls every
``poll_interval_s`` until stopped, so a fatal XID drains the node within one poll interval.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from velyrix.agent.checks import convert, suites
from velyrix.agent.checks.runner import CheckContext
from velyrix.agent.collectors.base import Collector, NodeSample
from velyrix.health import actions
from velyrix.health import evidence as ev
from velyrix.health.drains import SchedulerSeam
from velyrix.health.engine import Engine, Verdict
from velyrix.health.ladder import Action


class HealthMonitor:
    """Passive health for one node. ``clock`` gives the time used for evidence (wall or simulated, the
    same clock as the collector's XID timestamps); ``window_s`` bounds the kept samples."""

    def __init__(
        self,
        node: str,
        collector: Collector,
        seam: SchedulerSeam,
        *,
        engine: Engine | None = None,
        poll_interval_s: float = 60.0,
        clock: Callable[[], float] | None = time.time,
        window_s: float = 72 * 3600.0,
        max_samples: int = 512,
        deep_schedule: suites.DeepCheckSchedule | None = None,
    ) -> None:
        self.node = node
        self.collector = collector
        self.seam = seam
        self.engine = engine or Engine()
        self.poll_interval_s = poll_interval_s
        self.clock = clock
        self.window_s = window_s
        self.samples: deque[ev.CounterSample] = deque(maxlen=max_samples)
        self.xids: list[ev.XidEvent] = []
        self.checks: list[ev.CheckResult] = []
        self.repairs: list[ev.RepairEvent] = []
        self.held: Action | None = None
        self.last: Verdict | None = None
        self.last_sample: NodeSample | None = None
        self._booted_at_s: float | None = None
        self._seen_xids: set[tuple[float, int, int]] = set()
        self.stop = threading.Event()
        self.deep_schedule = deep_schedule

    def now(self) -> float:
        """The evidence clock: ``clock()``, or the time of the last sample when the samples carry it."""
        if self.clock is not None:
            return self.clock()
        return self.last_sample.collected_at_s if self.last_sample is not None else 0.0

    def add_checks(self, results: list[ev.CheckResult]) -> None:
        """Feed results of a quick/deep check run into the next verdict."""
        self.checks.extend(results)

    def run_suite(self, tier: str, ctx: CheckContext) -> Verdict:
        """Run the ``tier`` suite (quick between jobs, deep when idle, acceptance) and judge right away."""
        self.add_checks(suites.run_tier(tier, ctx))
        if tier != "quick" and self.deep_schedule is not None:
            self.deep_schedule.ran(self.node, self.now())
        return self.poll()

    def maybe_deep(self, ctx: CheckContext, idle: bool) -> Verdict | None:
        """Run the deep suite when ``deep_schedule`` says it is due and the node is ``idle``."""
        if self.deep_schedule is None or not self.deep_schedule.due(self.node, self.now(), idle):
            return None
        return self.run_suite("deep", ctx)

    def poll(self) -> Verdict:
        """One collection, verdict and action. Returns the verdict."""
        return self.observe(self.collector.collect())

    def observe(self, sample: NodeSample) -> Verdict:
        """Judge ``sample`` (collected by the caller) and act on the verdict. The evidence time is
        ``clock()``, or the sample's own ``collected_at_s`` when ``clock`` is None (the twin's collectors
        stamp samples with the twin's clock, the clock of its XID events)."""
        now = self.clock() if self.clock is not None else sample.collected_at_s
        booted = sample.booted_at_s
        if booted is not None and self._booted_at_s is not None and booted != self._booted_at_s:
            # the node rebooted (whoever did it): a fix at the REBOOT rung, as the recurrence rule counts it
            self.repairs.append(ev.RepairEvent(booted, "reboot", reason="node rebooted"))
        if booted is not None:
            self._booted_at_s = booted
        self.last_sample = sample
        self.samples.append(convert.counter_sample(sample, now))
        while self.samples and self.samples[0].t_s < now - self.window_s:
            self.samples.popleft()
        for x in convert.xid_events(sample):
            key = (x.t_s, x.code, x.gpu if x.gpu is not None else -1)
            if key not in self._seen_xids:
                self._seen_xids.add(key)
                self.xids.append(x)
        evidence = ev.Evidence.build(
            self.node, now, xids=self.xids, samples=self.samples, checks=self.checks, repairs=self.repairs
        )
        verdict = self.engine.evaluate(evidence)
        applied = actions.apply_verdict(verdict, self.seam, held_action=self.held)
        if "drain" in applied.ops:
            self.held = verdict.action
            self.repairs.append(ev.RepairEvent(now, "drain", reason=verdict.summary()))
        if "reboot" in applied.ops:
            self.repairs.append(ev.RepairEvent(now, "reboot", reason=verdict.summary()))
        if "undrain" in applied.ops:
            self.held = None
        self.last = verdict
        return verdict

    def run(self) -> None:
        """Poll every ``poll_interval_s`` (wall seconds) until ``stop`` is set."""
        while not self.stop.is_set():
            started = time.monotonic()
            self.poll()
            self.stop.wait(max(0.0, self.poll_interval_s - (time.monotonic() - started)))
