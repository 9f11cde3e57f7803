"""NodeSample (agent) -> health evidence records (health engine)."""

from __future__ import annotations

from velyrix.agent.collectors.base import NodeSample
from velyrix.health import evidence as ev


def counter_sample(sample: NodeSample, t_s: float | None = None) -> ev.CounterSample:
    """The engine's view of ``sample`` at ``t_s`` (default: its collection time). Fields a device did not
    report keep the engine's healthy defaults: checks that need them treat ``None`` as "could not run"."""
    return ev.CounterSample(
        t_s=sample.collected_at_s if t_s is None else t_s,
        gpus=tuple(ev.GpuReading.from_object(g) for g in sample.gpus),
        ib_ports=tuple(
            ev.IbPortReading(p.device, p.port, p.state, float(p.rate_gbps or 0.0), dict(p.counters))
            for p in sample.ib_ports
        ),
        nvme=tuple(
            ev.NvmeReading(
                d.name, int(d.media_errors or 0), int(d.percent_used or 0), d.read_gb_s_measured, d.write_gb_s_measured
            )
            for d in sample.nvme
        ),
    )


def xid_events(sample: NodeSample, since_s: float = float("-inf")) -> list[ev.XidEvent]:
    """The XID events of ``sample``'s GPUs at or after ``since_s`` (times on the collector's clock)."""
    return [ev.XidEvent(t, code, g.index) for g in sample.gpus for t, code in g.xid_events if t >= since_s]
