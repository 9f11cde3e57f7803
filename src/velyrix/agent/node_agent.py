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
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.agent.checks.monitor import HealthMonitor
from velyrix.agent.collectors.base import Collector, NodeSample
from velyrix.agent.reporting import Reporter

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
        verdict = self.monitor.observe(sample)
        if sample.up:
            sample.health_level = int(verdict.level)
            sample.health_action = int(verdict.action)
            sample.health_summary = verdict.summary()
            sample.health_verdict = verdict.to_dict()
        if self.reporter is not None:
            try:
                self.last_answer = self.reporter.report(sample)
                self.reports_sent += 1
                self.last_error = None
            except errors.AuthenticationError as exc:
                self.stopped = exc.message
                log.warning("%s: %s; this agent stops", self.monitor.node, exc.message)
            except errors.VelyrixError as exc:
                self.last_error = exc.message
                log.warning("%s: %s", self.monitor.node, exc.message)
        return sample

    def run(self, stop: threading.Event, interval_s: float) -> None:
        """Tick every ``interval_s`` wall seconds until ``stop`` is set or the agent stops."""
        while not stop.is_set() and self.stopped is None:
            self.tick()
            stop.wait(interval_s)
