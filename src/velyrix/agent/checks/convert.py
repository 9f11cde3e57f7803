"""NodeSample (agent) -> health evidence records (health engine), through the one conversion of
``velyrix.health.evidence`` that the control plane also uses on a report's JSON."""

from __future__ import annotations

from velyrix.agent.collectors.base import NodeSample
from velyrix.health import evidence as ev


def counter_sample(sample: NodeSample, t_s: float | None = None) -> ev.CounterSample:
    """The engine's view of ``sample`` at ``t_s`` (default: its collection time)."""
    return ev.CounterSample.from_reading(
        sample.collected_at_s if t_s is None else t_s, sample.gpus, sample.ib_ports, sample.nvme
    )


def xid_events(sample: NodeSample, since_s: float = float("-inf")) -> list[ev.XidEvent]:
    """The XID events of ``sample``'s GPUs at or after ``since_s`` (times on the collector's clock)."""
    return ev.xid_events_of(sample.gpus, since_s)
