"""The twin's flow counters on the wall clock, for Prometheus (docs/telemetry.md "Clocks").

A twin's counters advance in simulated time: at ``--speed 60`` a simulated second passes every 1/60 wall
second, so an InfiniBand port moving 200 Gb/s in simulated time adds 60 x 200 Gb of data counter per wall
second. Prometheus stamps every scrape with its own wall clock and computes ``rate()`` per wall second, so
the raw counters would show 60 times line rate. ``WallClockCounters`` presents each flow counter (bytes,
packets, wait ticks, energy, NVLink KiB: quantities per unit of time) on the wall clock: between two
readings it adds the counter's increase times ``wall seconds / simulated seconds`` elapsed, i.e. the
twin's own rate over that stretch of simulated time, times the wall seconds it took. A Prometheus
``rate()`` then reads the twin's physical rate (at or under line rate; energy rate equal to power) at
any clock speed, through jumps of the clock (``SimRegion.advance(seconds)``) as well.

Event counters (ECC errors, remaps, XIDs, link downs, symbol errors, replays) are left as they are: they
count events the twin produced, which arrive ``speed`` times faster per wall second on an accelerated
clock. The presented sample's ``collected_at_s`` is the wall time of the reading, the clock Prometheus and
the silent-node alert (``time() - velyrix_node_sample_timestamp_seconds``) use. Only the exposition goes
through this: the samples that reach the health engine and the control plane keep the twin's clock.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from dataclasses import dataclass, field

from velyrix.agent.collectors.base import NodeSample

GPU_FLOW_FIELDS = ("energy_mj", "nvlink_bandwidth_kib_total")
"""``GPUReading`` counters of a quantity per unit of time (mJ, KiB)."""
IB_FLOW_COUNTERS = ("port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets", "port_xmit_wait")
"""sysfs InfiniBand counters of traffic (4-byte words, packets) and of time (wait ticks)."""
NVME_FLOW_FIELDS = ("read_bytes", "written_bytes")


_Flow = tuple[float, float]
"""(raw, shown) of one counter. A plain tuple of floats, not an object: the garbage collector stops tracking
it (and the dict holding only such tuples) at its first pass, so the ~55 flows per node renewed at each
reading are never walked by a full collection (a class instance each: 550,000 objects at 10,000 nodes,
promoted to the oldest generation and walked by each of its collections, docs/benchmarks.md)."""


@dataclass
class _Node:
    sim_s: float
    wall_s: float
    flows: dict[tuple[str, ...], _Flow] = field(default_factory=dict)


class WallClockCounters:
    """Presents the flow counters of samples on a twin's clock on the wall clock (see the module doc).
    Keeps, per node and counter, the last raw value and the presented one. Thread-safe."""

    def __init__(self) -> None:
        self._nodes: dict[str, _Node] = {}
        self._lock = threading.Lock()

    def present(self, sample: NodeSample, wall_s: float) -> NodeSample:
        """A copy of ``sample`` (``collected_at_s``: simulated s of its counters) whose flow counters grow by
        their simulated rate per wall second, stamped ``wall_s`` (Unix s, when the counters were read).
        The first reading of a counter, and one lower than the last (a counter reset), is shown as is."""
        out = copy.copy(sample)  # what changes is copied; the rest is shared with ``sample``
        out.collected_at_s = wall_s
        out.gpus = [copy.copy(g) for g in sample.gpus]
        out.ib_ports = [dataclasses.replace(p, counters=dict(p.counters)) for p in sample.ib_ports]
        out.nvme = [copy.copy(d) for d in sample.nvme]
        with self._lock:
            prev = self._nodes.get(sample.hostname)
            scale = 0.0
            if prev is not None and sample.collected_at_s > prev.sim_s:
                scale = max(0.0, wall_s - prev.wall_s) / (sample.collected_at_s - prev.sim_s)
            node = _Node(sample.collected_at_s, wall_s)
            old = prev.flows if prev is not None else {}
            for gpu in out.gpus:
                for name in GPU_FLOW_FIELDS:
                    value = getattr(gpu, name)
                    if value is not None:
                        shown = _advance(node, old, ("gpu", gpu.uuid, name), value, scale)
                        setattr(gpu, name, shown if isinstance(value, float) else int(shown))
            for port in out.ib_ports:
                for name in IB_FLOW_COUNTERS:
                    if name in port.counters:
                        key = ("ib", port.device, str(port.port), name)
                        port.counters[name] = int(_advance(node, old, key, port.counters[name], scale))
            for drive in out.nvme:
                for name in NVME_FLOW_FIELDS:
                    value = getattr(drive, name)
                    if value is not None:
                        setattr(drive, name, int(_advance(node, old, ("nvme", drive.name, name), value, scale)))
            self._nodes[sample.hostname] = node
        return out


def _advance(node: _Node, old: dict[tuple[str, ...], _Flow], key: tuple[str, ...], raw: float, scale: float) -> float:
    """The presented value of counter ``key`` now at raw value ``raw``; recorded in ``node``."""
    last = old.get(key)
    if last is None or raw < last[0]:
        shown = float(raw)
    else:
        shown = last[1] + (raw - last[0]) * scale
    node.flows[key] = (float(raw), shown)
    return shown
