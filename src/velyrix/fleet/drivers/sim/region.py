"""A simulated region: nodes of catalog types in scalable units, on one clock, with faults.

``SimRegion.build("us-east-1", seed=7)`` gives the same serials, UUIDs, noise and spontaneous faults for the
same seed, every time.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from velyrix import errors
from velyrix.catalog import faults as catalog_faults
from velyrix.catalog import reader
from velyrix.fleet import hardware, topology
from velyrix.fleet.drivers.sim import faults, models
from velyrix.fleet.drivers.sim.clock import SimClock
from velyrix.fleet.drivers.sim.devices import SimBMC, SimGPU, SimIBPort, SimNode, SimNVMe


@dataclass(frozen=True)
class SimEvent:
    """Something that happened in the twin: a fault, or the start of its precursor."""

    at_s: float
    hostname: str
    kind: str
    """``fault`` or ``precursor``."""
    fault: faults.Fault
    cause: str | None = None
    """The catalog failure cause of a spontaneous fault (None: injected by hand)."""
    due_s: float | None = None
    """For a precursor: when its fault fires unless the part is swapped first (simulated s)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "at_s": self.at_s,
            "hostname": self.hostname,
            "kind": self.kind,
            "fault": self.fault.to_dict(),
            "cause": self.cause,
            "due_s": self.due_s,
        }


def _short(region: str) -> str:
    # "us-east-1" -> "use1": compact host names (use1-h200-su00-n00)
    parts = region.split("-")
    return parts[0] + "".join(p if p.isdigit() else p[0] for p in parts[1:])


def _gpu_tag(node_type: str) -> str:
    return node_type.split("-")[1] if "-" in node_type else node_type


class SimRegion:
    """The digital twin of one region. Build with ``SimRegion.build``.

    Attributes: ``name``, ``clock``, ``nodes`` (hostname -> ``SimNode``, in position order),
    ``spares`` (node type -> spare count held back by the region's ``spare_fraction``), ``events``.
    """

    def __init__(self, name: str, clock: SimClock, seed: int) -> None:
        self.name = name
        self.clock = clock
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.nodes: dict[str, SimNode] = {}
        self.spares: dict[str, int] = {}
        self.events: list[SimEvent] = []
        self.trends: list[faults.Trend] = []
        self.spontaneous = False
        self.failure_rate_per_1000_node_days = reader.failure_rates().default
        self.precursor_window_s = 6 * 3600.0
        self._last_s = clock.now()
        self._last_wall_s = time.time()
        self.lock = threading.RLock()
        """Held by ``advance``, ``inject`` and ``repair``: the API, the reconciler and a ticker share the twin."""

    # --- construction ---------------------------------------------------------------------------

    @classmethod
    def build(
        cls, region: str, node_counts: dict[str, int] | None = None, seed: int = 0, clock: SimClock | None = None
    ) -> SimRegion:
        """Build the twin of catalog region ``region``.

        ``node_counts`` (node type -> nodes) defaults to the region's catalog capacity; nodes fill scalable
        units in order, cabled as the fabric planner plans them on the node type's first fabric
        (``velyrix.fleet.topology``), or in SUs of the region's ``scalable_unit_nodes``. Spares
        (``ceil(count * spare_fraction)`` per type) are a count the allocator holds back, not particular nodes.
        Firmware starts at the region's baseline.
        """
        spec = reader.region(region)
        counts = dict(spec.capacity) if node_counts is None else dict(node_counts)
        for node_type, count in counts.items():
            reader.node_type(node_type)  # unknown types raise with a suggestion
            if count < 0:
                raise errors.InvalidInputError(f"node count for {node_type} must be >= 0, got {count}")
        sim = cls(region, clock or SimClock(), seed)
        for node_type, count in counts.items():
            sim.spares[node_type] = math.ceil(count * spec.spare_fraction)
            plan = topology.fabric_plan(node_type, count)
            for i in range(count):
                node = sim._make_node(node_type, i, spec.scalable_unit_nodes, spec.firmware_baseline, plan)
                sim.nodes[node.hostname] = node
        return sim

    def _serial(self, prefix: str) -> str:
        return f"{prefix}{int(self.rng.integers(10**11, 10**12))}"

    def _mac(self) -> str:
        raw = self.rng.integers(0, 256, size=5)
        return "02:" + ":".join(f"{int(b):02x}" for b in raw)

    def _make_node(
        self, node_type: str, index: int, su_nodes: int, baseline: dict[str, str], plan: Any | None = None
    ) -> SimNode:
        nt = reader.node_type(node_type)
        model = reader.gpu_model(nt.gpu_model)
        pos = topology.position(self.name, index, nt.compute_nics, su_nodes, plan)
        su, slot = pos.su, pos.slot
        hostname = f"{_short(self.name)}-{_gpu_tag(node_type)}-su{su:02d}-n{slot:02d}"
        fb_mib = int(nt.gpu_memory_gb * 1e9 / 2**20)
        noise = self.rng.normal(1.0, models.NOISE, size=(nt.gpus_per_node, 2))
        gpus = []
        for g in range(nt.gpus_per_node):
            gpu = SimGPU(
                index=g,
                uuid="GPU-" + str(uuid.UUID(bytes=self.rng.bytes(16), version=4)),
                serial=self._serial("165"),
                name=nt.gpu_model,
                model=model,
                fb_total_mib=fb_mib,
                peak_bf16_tflops=nt.bf16_dense_tflops,
                peak_hbm_gb_s=nt.hbm_bandwidth_gb_s,
                mem_clock_mhz=model.mem_clock_mhz,
                sm_clock_mhz=model.idle_sm_clock_mhz,
                power_w=model.idle_w,
                fb_free_mib=fb_mib,
                nvlink_links_up=model.nvlink_links,
                _noise=(
                    float(min(noise[g, 0], 1.0 + 3 * models.NOISE)),
                    float(min(noise[g, 1], 1.0 + 3 * models.NOISE)),
                ),
            )
            gpu.refresh_measured()
            gpus.append(gpu)
        cx7 = baseline.get("cx7_firmware", "")
        ports = [
            SimIBPort(
                device=f"mlx5_{r}", port=1, state="ACTIVE", rate_gbps=nt.compute_nic_gbps, mac=self._mac(), firmware=cx7
            )
            for r in range(nt.compute_nics)
        ]
        other = [
            hardware.NICInfo(
                device=f"mlx5_{nt.compute_nics + s}",
                role="storage",
                speed_gbps=nt.storage_nic_gbps,
                mac=self._mac(),
                firmware=cx7,
            )
            for s in range(nt.storage_nics)
        ]
        other.append(hardware.NICInfo(device="eno1", role="inband", speed_gbps=nt.inband_nic_gbps, mac=self._mac()))
        drive_tb = round(nt.local_nvme_tb / nt.local_nvme_drives, 2)
        read = nt.local_nvme_read_gb_s / nt.local_nvme_drives * models.NVME_EFFICIENCY
        write = nt.local_nvme_write_gb_s / nt.local_nvme_drives * models.NVME_EFFICIENCY
        drives = [
            SimNVMe(
                name=f"nvme{d}n1",
                serial=self._serial("S6"),
                capacity_tb=drive_tb,
                read_gb_s_measured=read,
                write_gb_s_measured=write,
                healthy_read_gb_s=read,
                healthy_write_gb_s=write,
            )
            for d in range(nt.local_nvme_drives)
        ]
        bmc = SimBMC(
            address=f"10.{200 + su // 256}.{su % 256}.{slot + 10}", mac=self._mac(), firmware=baseline.get("bmc", "")
        )
        return SimNode(
            hostname=hostname,
            node_type=node_type,
            serial=self._serial("SN"),
            bmc=bmc,
            gpus=gpus,
            ib_ports=ports,
            nvme=drives,
            firmware=dict(baseline),
            position=pos,
            other_nics=other,
        )

    # --- persistence ----------------------------------------------------------------------------

    STATE_FIELDS = ("image", "networks", "mounts", "tenant_data", "firmware", "powered")
    """What the driver changes on a node (the twin's "hardware truth" of provisioning)."""

    def state(self, hostnames: Iterable[str] | None = None) -> dict[str, Any]:
        """The driver-visible state of every node (or only of ``hostnames``) and the clock, as JSON-able data
        (see ``restore``)."""
        with self.lock:
            names = self.nodes if hostnames is None else [h for h in hostnames if h in self.nodes]
            return {
                "region": self.name,
                "seed": self.seed,
                "clock_s": self.clock.now(),
                "nodes": {h: {f: getattr(self.nodes[h], f) for f in self.STATE_FIELDS} for h in names},
            }

    def restore(self, state: dict[str, Any]) -> None:
        """Put back what ``state`` recorded (unknown hostnames are ignored); the clock does not go back."""
        with self.lock:
            for hostname, fields in state.get("nodes", {}).items():
                node = self.nodes.get(hostname)
                if node is None:
                    continue
                for f in self.STATE_FIELDS:
                    if f in fields:
                        setattr(node, f, fields[f])
            behind = float(state.get("clock_s", 0.0)) - self.clock.now()
            if behind > 0:
                self.clock.advance(behind)
                self._last_s, self._last_wall_s = self.clock.now(), time.time()

    # --- lookup ---------------------------------------------------------------------------------

    def node(self, hostname: str) -> SimNode:
        """The node called ``hostname``; unknown names raise ``UnknownNameError`` with the closest."""
        try:
            return self.nodes[hostname]
        except KeyError:
            raise errors.UnknownNameError("node", hostname, self.nodes) from None

    # --- time and faults ------------------------------------------------------------------------

    def enable_spontaneous(
        self, on: bool = True, *, rate_per_1000_node_days: float | None = None, precursor_window_s: float | None = None
    ) -> None:
        """Turn spontaneous faults on or off; the rate defaults to the catalog's default node failure rate."""
        self.spontaneous = on
        if rate_per_1000_node_days is not None:
            self.failure_rate_per_1000_node_days = rate_per_1000_node_days
        if precursor_window_s is not None:
            self.precursor_window_s = precursor_window_s

    def inject(self, hostname: str, fault: faults.Fault, *, precursor_s: float = 0.0, cause: str | None = None) -> None:
        """Inject ``fault`` into ``hostname`` now, or — with ``precursor_s`` > 0 and a kind that has a
        precursor — start its precursor trend now and fire the fault ``precursor_s`` simulated seconds later."""
        with self.lock:
            node = self.node(hostname)
            faults.validate(node, fault)
            now = self.clock.now()
            trend = faults.TRENDS.get(fault.kind)
            if precursor_s > 0 and trend is not None:
                kind, rate = trend
                self.trends.append(
                    faults.Trend(
                        hostname=hostname,
                        kind=kind,
                        fault=fault,
                        rate_per_h=rate,
                        started_s=now,
                        until_s=now + precursor_s,
                        last_s=now,
                        cause=cause,
                    )
                )
                self.events.append(SimEvent(now, hostname, "precursor", fault, cause, due_s=now + precursor_s))
                return
            faults.apply(node, fault, now)
            self.events.append(SimEvent(now, hostname, "fault", fault, cause))

    def repair(self, hostname: str) -> None:
        """Swap the failed parts of ``hostname`` (and drop its pending trends)."""
        with self.lock:
            node = self.node(hostname)
            self.trends = [t for t in self.trends if t.hostname != hostname]
            faults.repair(node, self.clock.now())

    def advance(self, seconds: float = 0.0) -> float:
        """Move the clock by ``seconds`` (0: just catch up with a running clock) and bring counters,
        trends and spontaneous faults up to the new time. Returns the new simulated time (s)."""
        with self.lock:
            end = self.clock.advance(seconds) if seconds else self.clock.now()
            start = self._last_s
            if end <= start:
                return end
            dt = end - start
            for node in self.nodes.values():
                node.step(dt)
            if self.spontaneous:
                self._spawn_spontaneous(start, end)
            # fire trends whose window closes before `end`, in time order
            for trend in sorted(self.trends, key=lambda t: t.until_s):
                node = self.nodes[trend.hostname]
                faults.advance_trend(node, trend, end)
                if trend.until_s <= end:
                    faults.apply(node, trend.fault, trend.until_s)
                    self.events.append(SimEvent(trend.until_s, trend.hostname, "fault", trend.fault, trend.cause))
            self.trends = [t for t in self.trends if t.until_s > end]
            self._last_s, self._last_wall_s = end, time.time()
            return end

    def catch_up(self, max_age_wall_s: float) -> float:
        """``advance(0.0)`` unless the devices were brought up to the clock less than ``max_age_wall_s`` wall
        seconds ago: a caller that needs the twin only roughly current (a driver request completing) costs
        one step of the fleet per ``max_age_wall_s``, not one per call. Returns the simulated time (s) the
        devices stand at."""
        with self.lock:
            if time.time() - self._last_wall_s < max_age_wall_s:
                return self._last_s
            return self.advance(0.0)

    def advanced_at(self) -> tuple[float, float]:
        """``(simulated s, wall Unix s)`` of the last ``advance``: the time the devices' counters stand at,
        and when on the wall clock they were brought there (the exporter's clock mapping, agent/wall_rates.py)."""
        with self.lock:
            return self._last_s, self._last_wall_s

    def _spawn_spontaneous(self, start: float, end: float) -> None:
        rates = reader.failure_rates()
        per_node_s = self.failure_rate_per_1000_node_days / 1000.0 / 86400.0
        count = int(self.rng.poisson(per_node_s * len(self.nodes) * (end - start)))
        if not count:
            return
        hostnames = list(self.nodes)
        shares = np.array([c.share for c in rates.causes])
        for at in sorted(float(t) for t in self.rng.uniform(start, end, size=count)):
            hostname = hostnames[int(self.rng.integers(len(hostnames)))]
            cause = rates.causes[int(self.rng.choice(len(rates.causes), p=shares / shares.sum()))]
            chosen = catalog_faults.cause_fault(cause.name)
            kind, xid = chosen.kind, chosen.xid
            node = self.nodes[hostname]
            fault = faults.Fault(
                kind=kind,
                xid=xid,
                gpu=int(self.rng.integers(len(node.gpus))),
                port=int(self.rng.integers(len(node.ib_ports))) if kind == "ib_down" else None,
                drive=int(self.rng.integers(len(node.nvme))) if kind == "slow_disk" else None,
            )
            trend = faults.TRENDS.get(kind)
            if cause.precursor and trend is not None:
                self.trends.append(
                    faults.Trend(
                        hostname=hostname,
                        kind=trend[0],
                        fault=fault,
                        rate_per_h=trend[1],
                        started_s=at,
                        until_s=at + self.precursor_window_s,
                        last_s=at,
                        cause=cause.name,
                    )
                )
                self.events.append(
                    SimEvent(at, hostname, "precursor", fault, cause.name, due_s=at + self.precursor_window_s)
                )
            else:
                faults.apply(node, fault, at)
                self.events.append(SimEvent(at, hostname, "fault", fault, cause.name))
