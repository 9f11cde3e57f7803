"""The health loop over a training job's twin nodes: which node leaves, when, and why.

Policies (as in ``velyrix.ops.study.evaluation``):
- ``reactive``: a node with a lasting fault (a dead GPU, link or part, a slowed GPU or disk) is drained when
  its agent reports it (``report_s`` after the fault; the runner does this); precursors are ignored.
- ``proactive``: the same, and the Velyrix engine judges every node with a moving signal at each poll
  (the agent's path: twin node -> NodeSample -> evidence -> verdict). DRAIN_AFTER_JOB takes a job node
  out at the job's next complete checkpoint; DRAIN_NOW and above take it out now.

Transient faults (an application XID) crash the job but leave the node in service.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.agent.checks import convert
from velyrix.agent.collectors.sim import read_node
from velyrix.fleet.drivers.sim import SimRegion
from velyrix.fleet.drivers.sim.faults import Fault
from velyrix.health import evidence as ev
from velyrix.health.engine import Engine
from velyrix.health.ladder import Action, Level

POLICIES = ("reactive", "proactive")
H = 3600.0


def lasting(fault: Fault) -> bool:
    """Whether the node stays broken after ``fault`` (an XID other than 79 only crashes the application)."""
    return fault.kind != "xid" or fault.xid == 79


def crashes_job(fault: Fault) -> bool:
    """Whether ``fault`` stops the training job at once (a slowed GPU, a hot GPU or a slow disk only slow it)."""
    return fault.kind not in ("slow_gpu", "thermal", "slow_disk")


@dataclass(frozen=True)
class Decision:
    """The health loop's decision about one node: leave ``now`` or ``after_checkpoint``, and why."""

    host: str
    when: str
    reason: str
    precursor: bool = False


@dataclass
class _Node:
    samples: deque[ev.CounterSample] = field(default_factory=lambda: deque(maxlen=96))
    xids: list[ev.XidEvent] = field(default_factory=list)
    xid_seen: float = -1.0
    repairs: list[ev.RepairEvent] = field(default_factory=list)
    known: ev.CounterSample | None = None
    open_fault: str | None = None
    decided: bool = False


class HealthLoop:
    """Polls the twin nodes of a job (and its spares) under ``policy``; ``poll`` returns decisions."""

    def __init__(self, policy: str, region: SimRegion, poll_s: float) -> None:
        if policy not in POLICIES:
            raise errors.UnknownNameError("health policy", policy, POLICIES)
        self.policy, self.region, self.poll_s = policy, region, poll_s
        self.engine = Engine()
        self.state = {h: _Node() for h in region.nodes}
        if policy == "proactive":
            for host, node in region.nodes.items():
                self.state[host].known = convert.counter_sample(read_node(node), 0.0)

    def on_fault(self, host: str, fault: Fault) -> None:
        """A fault fired on ``host`` (from the twin's event list)."""
        if lasting(fault):
            self.state[host].open_fault = fault.kind if fault.kind != "xid" else f"xid {fault.xid}"

    def repaired(self, host: str, t_s: float, kind: str = "part_swap") -> None:
        """``host`` left service and its parts were swapped: forget its history."""
        st = self.state[host]
        st.samples.clear()
        st.xids.clear()
        st.open_fault, st.decided = None, False
        st.repairs.append(ev.RepairEvent(t_s, kind))
        if self.policy == "proactive":
            st.known = convert.counter_sample(read_node(self.region.nodes[host]), t_s)

    def poll(self, t_s: float, touched: set[str], in_service: set[str]) -> list[Decision]:
        """The engine's decisions at ``t_s`` about nodes of ``in_service`` (``touched``: nodes with new twin
        events); none under ``reactive``."""
        if self.policy != "proactive":
            return []
        return self._judge(t_s, touched, in_service)

    def report(self, host: str) -> Decision | None:
        """The agent's report of a lasting fault on ``host``: drain it now (once)."""
        st = self.state[host]
        if st.open_fault is None or st.decided:
            return None
        st.decided = True
        return Decision(host, "now", f"failed: {st.open_fault}")

    def _candidates(self, touched: set[str], in_service: set[str]) -> set[str]:
        moving = touched | {tr.hostname for tr in self.region.trends}
        return {h for h in moving if h in in_service and not self.state[h].decided}

    def _judge(self, t_s: float, touched: set[str], in_service: set[str]) -> list[Decision]:
        out = []
        for host in sorted(self._candidates(touched, in_service)):
            st = self.state[host]
            verdict = self.engine.evaluate(self._evidence(host, st, t_s))
            action = verdict.action
            if action < Action.DRAIN_AFTER_JOB and not (action >= Action.RESET_GPU and verdict.level >= Level.FATAL):
                continue
            st.decided = True
            st.repairs.append(ev.RepairEvent(t_s, "drain", reason=verdict.summary()))
            when = "after_checkpoint" if action == Action.DRAIN_AFTER_JOB else "now"
            out.append(Decision(host, when, verdict.summary(), precursor=st.open_fault is None))
        return out

    def _evidence(self, host: str, st: _Node, t_s: float) -> ev.Evidence:
        sample = read_node(self.region.nodes[host])
        if st.known is not None and (not st.samples or st.samples[-1].t_s < t_s - self.poll_s):
            # between polls that touched it the node's counters did not move (the twin changes them only
            # through events and trends): that flat stretch is kept as a few points, as the offline
            # health evaluation does (velyrix/ops/study/simulation.py)
            last = st.samples[-1].t_s if st.samples else float("-inf")
            for at in sorted({t_s - h * H for h in (24, 18, 12, 6)} | {t_s - self.poll_s}):
                if at > last:
                    st.samples.append(ev.CounterSample(at, st.known.gpus, st.known.ib_ports, st.known.nvme))
        st.samples.append(convert.counter_sample(sample, t_s))
        st.known = st.samples[-1]
        new = [x for x in convert.xid_events(sample) if x.t_s > st.xid_seen]
        if new:
            st.xids.extend(new)
            st.xid_seen = max(x.t_s for x in new)
        return ev.Evidence(host, t_s, tuple(st.xids), tuple(st.samples), (), tuple(st.repairs))


def describe(decisions: list[Decision]) -> list[dict[str, Any]]:
    return [{"host": d.host, "when": d.when, "reason": d.reason, "precursor": d.precursor} for d in decisions]
