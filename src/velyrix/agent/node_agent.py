"""One node's agent loop: collect, judge with the agent's own health engine, report (one ``tick``).

``NodeAgent.tick()`` reads the node once through its collector, gives the sample to the node's
``HealthMonitor`` (evidence window, verdict), stamps the verdict on the sample and sends it through the
``Reporter`` (the node-report wire contract of ``velyrix.agent.reporting``). ``velyrix agent --collector twin``
runs one on its poll cadence; ``velyrix up`` runs one per twin node (``velyrix.ops.twin_agents``).
A node token the control plane refuses (rotated: an agent elsewhere now reports for the node) stops the
agent: ``stopped`` says why.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.agent import jobs, wall_rates
from velyrix.agent.checks.monitor import HealthMonitor
from velyrix.agent.collectors.base import Collector, NodeSample
from velyrix.agent.reporting import Reporter
from velyrix.health.ladder import Action

log = logging.getLogger("velyrix.agent")


@dataclass
class NodeAgent:
    """The agent of one node. ``reporter`` None: judge only (``--once``, no control plane)."""

    collector: Collector
    monitor: HealthMonitor
    reporter: Reporter | None = None
    stopped: str | None = None
    """Why the agent stopped reporting (None while it runs)."""
    reports_sent: int = 0
    last_error: str | None = None
    last_answer: dict[str, Any] = field(default_factory=dict)
    job_map: Callable[[], jobs.JobMap] | None = None
    """The node's job mapping read now (the prolog's directory: ``jobs.read_job_map``); each report carries
    its jobs (``NodeSample.jobs``). None: the report names no job."""
    unchanged_every_s: float | None = None
    """None (default): report every poll. A number: a poll whose evidence and verdict equal the last report's
    is sent only once this many seconds of the sample clock have passed since that report (a heartbeat);
    any change is sent at once. ``velyrix up --agent-step`` uses it to fast-forward a large twin."""
    skipped: int = 0
    """Polls not sent because nothing had changed (``unchanged_every_s``)."""
    _last_sent: tuple[float, Any, int] | None = None
    _last_polled: Any = None

    def tick(self) -> NodeSample | None:
        """One poll: collect, judge, report. Returns the stamped sample (None once stopped). Failures to
        collect or report are kept in ``last_error`` and logged; the next tick tries again."""
        if self.stopped is not None:
            return None
        try:
            sample = self.collector.collect()
        except errors.VelyrixError as exc:
            self.last_error = exc.message
            log.warning("%s", exc.message)
            return None
        if self.job_map is not None and sample.up:
            sample.jobs = self.job_map().report()
        seen = fingerprint(sample) if self.unchanged_every_s is not None else None
        last = self.monitor.last
        if seen is not None and seen == self._last_polled and last is not None and last.action == Action.IGNORE:
            verdict = last  # the same evidence as the last poll, judged healthy: judged healthy again
        else:
            verdict = self.monitor.observe(sample)
        self._last_polled = seen
        if sample.up:
            sample.health_level = int(verdict.level)
            sample.health_action = int(verdict.action)
            sample.health_summary = verdict.summary()
            sample.health_verdict = verdict.to_dict()
        if self.reporter is not None and self._unchanged(sample, verdict.action):
            self.skipped += 1
        elif self.reporter is not None:
            try:
                self.last_answer = self.reporter.report(sample)
                self.reports_sent += 1
                self.last_error = None
                self._last_sent = (sample.collected_at_s, seen, int(verdict.action))
            except errors.AuthenticationError as exc:
                self.stopped = exc.message
                log.warning("%s: %s; this agent stops", self.monitor.node, exc.message)
            except errors.VelyrixError as exc:
                self.last_error = exc.message
                log.warning("%s: %s", self.monitor.node, exc.message)
        return sample

    def _unchanged(self, sample: NodeSample, action: Action) -> bool:
        """True when ``unchanged_every_s`` is set, the last report is younger than it, and this poll shows
        what that report showed (same evidence, same action)."""
        if self.unchanged_every_s is None or self._last_sent is None:
            return False
        at_s, seen, sent_action = self._last_sent
        fresh = sample.collected_at_s - at_s < self.unchanged_every_s
        return fresh and self._last_polled == seen and sent_action == int(action)

    def run(self, stop: threading.Event, interval_s: float) -> None:
        """Tick every ``interval_s`` wall seconds until ``stop`` is set or the agent stops."""
        while not stop.is_set() and self.stopped is None:
            self.tick()
            stop.wait(interval_s)


def fingerprint(sample: NodeSample) -> Any:
    """What the evidence of ``sample`` holds, less the clock and the flow counters that grow on
    every poll (energy, traffic: ``velyrix.agent.wall_rates``): equal for two polls of a node nothing
    happened to."""
    flows = set(wall_rates.GPU_FLOW_FIELDS)
    gpus = [sorted((k, repr(v)) for k, v in vars(g).items() if k not in flows) for g in sample.gpus]
    ib_flows = set(wall_rates.IB_FLOW_COUNTERS)
    ports = [
        (p.device, p.port, p.state, sorted((k, v) for k, v in p.counters.items() if k not in ib_flows))
        for p in sample.ib_ports
    ]
    drives = [sorted((k, v) for k, v in vars(d).items() if k not in wall_rates.NVME_FLOW_FIELDS) for d in sample.nvme]
    jobs_on = repr(sample.jobs)  # a job starting or ending is news
    return (sample.up, sample.booted_at_s, tuple(sample.problems), repr(gpus), repr(ports), repr(drives), jobs_on)
