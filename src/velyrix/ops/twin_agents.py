"""Every twin node observed: the node agent of each twin node, run inside ``velyrix up`` (agents in other
processes read their twin node through ``velyrix.ops.twin_routes``).

- ``TwinAgents``: one ``velyrix.agent.node_agent.NodeAgent`` per twin node (the ``twin`` collector bound to
  the node's live state, the agent's own health monitor, a ``Reporter`` with the node's own token), ticked
  on the agent's poll cadence in one thread, reporting over HTTP to the API like any agent. When an
  operator rotates a node's token (``velyrix node token NODE``) to run its agent elsewhere, the in-process
  agent of that node is refused (401) and stops: one agent per node.
- Fast-forward (``velyrix up --agent-step S``): the twin's clock no longer runs on its own; after each poll of
  every node the agents' thread advances it by ``S`` simulated seconds (to ``until_s`` at most), so a month of
  a large twin takes minutes whatever the machine's speed, and every node is judged every ``S`` simulated
  seconds. Agents then send a poll whose evidence and verdict did not change only as a heartbeat
  (``NodeAgent.unchanged_every_s``).
- ``serve_exporter``: the fleet exporter of the same twin nodes (``velyrix up --exporter-port``, default
  ``EXPORTER_PORT``): one Prometheus target per node listed at ``/sd`` (``velyrix.agent.fleet_targets``), read
  from the devices the agents read, flow counters on the wall clock (docs/telemetry.md "Clocks").
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from pathlib import Path

import httpx
import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.agent import fleet_targets, jobs
from velyrix.agent.checks.monitor import HealthMonitor
from velyrix.agent.collectors.sim import twin_sample
from velyrix.agent.collectors.twin import TwinCollector
from velyrix.agent.node_agent import NodeAgent
from velyrix.agent.reporting import Reporter
from velyrix.controlplane import node_health
from velyrix.controlplane.db import models
from velyrix.fleet.drivers.sim import SimRegion
from velyrix.health.drains import InMemorySeam

log = logging.getLogger("velyrix.twin_agents")

AGENT_INTERVAL_S = 5.0
"""Default poll cadence of the twin's node agents (wall seconds)."""


EXPORTER_PORT = 9501
"""Default port of ``velyrix up``'s fleet exporter (``velyrix sim exporter`` defaults to 9500, the agent to 9402)."""


def serve_exporter(
    region: SimRegion,
    host: str = "127.0.0.1",
    port: int = EXPORTER_PORT,
    *,
    advance_every_s: float = 1.0,
    job_map_root: Path | None = None,
) -> fleet_targets.FleetServer:
    """The fleet exporter of ``region``'s nodes on ``host:port`` (0: a free port), as ``velyrix sim exporter
    --per-node`` serves it: ``/sd`` lists one target per node, ``/nodes/<hostname>/metrics`` is that node's
    exposition. The region is caught up to its clock every ``advance_every_s`` wall seconds (with
    ``--agent-step`` the clock only moves with the agents, and this adds nothing). A port in use raises
    ``InvalidInputError``; ``close()`` stops it. ``job_map_root``: each node's GPU-to-job map is
    ``<job_map_root>/<hostname>/`` (the delivered Slurm's prolog writes it): its jobs label the GPUs."""
    return fleet_targets.FleetServer(
        fleet_targets.FleetTargets(region, advance_every_s=advance_every_s, job_map_root=job_map_root),
        host,
        port,
        hint="choose another --exporter-port (0: no exporter)",
    )


HEARTBEAT_S = 86400.0
"""Fast-forward: simulated seconds after which an agent reports an unchanged node anyway."""


def agent_for(
    region: SimRegion,
    hostname: str,
    reporter: Reporter | None,
    *,
    window_samples: int = 120,
    job_map_dir: Path | None = None,
) -> NodeAgent:
    """The agent of twin node ``hostname``: ``twin`` collector on the live node, health monitor on the twin's
    clock (the samples' own time), ``reporter`` to the control plane; ``job_map_dir``: the node's job mapping
    (the delivered Slurm's prolog writes it), whose jobs each report names."""
    collector = TwinCollector(hostname, lambda h: twin_sample(region, h))
    monitor = HealthMonitor(
        hostname, collector, InMemorySeam(clock=region.clock.now), clock=None, max_samples=window_samples
    )
    job_map = None if job_map_dir is None else functools.partial(jobs.read_job_map, job_map_dir)
    return NodeAgent(collector, monitor, reporter, job_map=job_map)


class TwinAgents:
    """The agents of every twin node of ``region`` known to the database, reporting to ``url``."""

    def __init__(
        self,
        sessionmaker: orm.sessionmaker[orm.Session],
        region: SimRegion,
        url: str,
        *,
        interval_s: float = AGENT_INTERVAL_S,
        step_s: float | None = None,
        until_s: float | None = None,
        job_map_root: Path | None = None,
    ) -> None:
        """``step_s``: fast-forward (see the module doc), up to the simulated time ``until_s`` (None: on and on);
        ``job_map_root``: each node's job mapping is ``<job_map_root>/<hostname>/`` (``serve_exporter``)."""
        self.job_map_root = job_map_root
        self.sessionmaker = sessionmaker
        self.region = region
        self.url = url
        self.interval_s = interval_s
        self.step_s = step_s
        self.until_s = until_s
        self.agents: dict[str, NodeAgent] = {}
        self.client = httpx.Client(timeout=10.0)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def issue_tokens(self) -> dict[str, str]:
        """A fresh node token for every twin node the database knows (earlier tokens are revoked)."""
        with self.sessionmaker() as s:
            nodes = s.scalars(sa.select(models.Node).where(models.Node.name.in_(list(self.region.nodes)))).all()
            tokens = node_health.issue_tokens(s, list(nodes), created_by="velyrix up (twin agents)")
            s.commit()
        return tokens

    def build(self) -> None:
        """One agent per twin node, each with its own token."""
        for hostname, token in sorted(self.issue_tokens().items()):
            reporter = Reporter(self.url, token, attempts=3, backoff_s=0.2, max_backoff_s=2.0, client=self.client)
            jobs_dir = None if self.job_map_root is None else self.job_map_root / hostname
            self.agents[hostname] = agent_for(self.region, hostname, reporter, job_map_dir=jobs_dir)
            if self.step_s is not None:
                self.agents[hostname].unchanged_every_s = HEARTBEAT_S

    def tick(self) -> int:
        """One poll of every running agent; returns how many reported."""
        sent = 0
        for agent in self.agents.values():
            if self._stop.is_set():
                break
            before = agent.reports_sent
            agent.tick()
            sent += agent.reports_sent - before
        return sent

    def _wait_for_api(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self._stop.is_set():
            try:
                if self.client.get(f"{self.url}/healthz").status_code < 500:
                    return
            except httpx.TransportError:
                pass
            self._stop.wait(0.1)

    def _run(self) -> None:
        self._wait_for_api()
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.tick()
            except Exception:  # one bad poll must not end the observation of the fleet
                log.exception("twin agents: poll failed")
            if self.step_s is not None and self._forward():
                continue
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    def _forward(self) -> bool:
        """Fast-forward: advance the twin by one step (not past ``until_s``); False once there."""
        assert self.step_s is not None
        now = self.region.clock.now()
        step = self.step_s if self.until_s is None else min(self.step_s, self.until_s - now)
        if step <= 0:
            return False
        self.region.advance(step)
        self._stop.wait(0.01)  # the reconciler's turn
        return True

    def start(self) -> None:
        """Build the agents and poll in a daemon thread until ``stop``."""
        self.build()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="velyrix-twin-agents", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self.client.close()

    def running(self) -> list[str]:
        """Hostnames whose agent still reports from here."""
        return [h for h, a in self.agents.items() if a.stopped is None]
