"""The twin as hardware: reads a ``SimNode`` of ``velyrix.fleet.drivers.sim`` the way the real
collectors read NVML and sysfs, so that the exporter, the rules and the health checks see the same data.

When a ``region`` is given, ``collect()`` first brings the region's counters up to its clock
(``region.advance()``; one region may be shared by many collectors, hence the lock).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from velyrix.agent.collectors.base import (
    Collector,
    GPUReading,
    IBPortReading,
    NodeSample,
    NVMeReading,
    Prober,
    xid_counts,
)

if TYPE_CHECKING:
    from velyrix.fleet.drivers.sim import SimGPU, SimNode, SimRegion

_ADVANCE_LOCKS: dict[int, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def region_lock(region: SimRegion) -> threading.Lock:
    """The lock that serializes changes to ``region`` (advancing it, injecting faults) across threads."""
    with _LOCKS_GUARD:
        return _ADVANCE_LOCKS.setdefault(id(region), threading.Lock())


def catch_up(region: SimRegion) -> None:
    """Advance ``region`` to its clock's current time (thread-safe per region)."""
    with region_lock(region):
        region.advance()


def pci_bus_id(index: int) -> str:
    """The twin's PCI address of GPU ``index`` (NVML's ``busId`` form: domain:bus:device.function)."""
    return f"00000000:{0x18 + 0x10 * index:02X}:00.0"


def read_gpu(g: SimGPU, driver: str | None = None) -> GPUReading:
    """A ``GPUReading`` of one twin GPU; a GPU off the bus reports only identity, XIDs and ``responsive``.
    ``driver``: the node's driver version (its firmware baseline's ``driver``)."""
    events = list(g.xid_events)
    if not g.responsive:
        lost = GPUReading.unread(g.index, g.uuid)
        lost.name, lost.serial, lost.xid_events, lost.xid_counts = g.name, g.serial, events, xid_counts(events)
        lost.responsive, lost.pci_bus_id, lost.driver_version = False, pci_bus_id(g.index), driver
        return lost
    return GPUReading(
        index=g.index,
        uuid=g.uuid,
        name=g.name,
        serial=g.serial,
        temperature_c=g.temperature_c,
        memory_temperature_c=g.memory_temperature_c,
        power_w=g.power_w,
        energy_mj=g.energy_mj,
        sm_clock_mhz=g.sm_clock_mhz,
        mem_clock_mhz=g.mem_clock_mhz,
        utilization_pct=g.utilization_pct,
        mem_copy_util_pct=g.mem_copy_util_pct,
        fb_used_mib=g.fb_used_mib,
        fb_free_mib=g.fb_free_mib,
        ecc_sbe_volatile=g.ecc_sbe_volatile,
        ecc_dbe_volatile=g.ecc_dbe_volatile,
        ecc_sbe_aggregate=g.ecc_sbe_aggregate,
        ecc_dbe_aggregate=g.ecc_dbe_aggregate,
        remapped_rows_correctable=g.remapped_rows_correctable,
        remapped_rows_uncorrectable=g.remapped_rows_uncorrectable,
        remap_pending=g.remap_pending,
        remap_failure=g.remap_failure,
        remap_bank_max=g.remap_bank_max,
        sram_uncorrectable=g.sram_uncorrectable,
        retired_pages=g.retired_pages,
        xid_events=events,
        xid_counts=xid_counts(events),
        nvlink_crc_errors=g.nvlink_crc_errors,
        nvlink_replay_errors=g.nvlink_replay_errors,
        nvlink_recovery_errors=g.nvlink_recovery_errors,
        nvlink_links_up=g.nvlink_links_up,
        pcie_replay=g.pcie_replay,
        throttle_reasons=g.throttle_reasons,
        bf16_tflops_measured=g.bf16_tflops_measured,
        hbm_gb_s_measured=g.hbm_gb_s_measured,
        responsive=True,
        enc_util_pct=g.enc_util_pct,
        dec_util_pct=g.dec_util_pct,
        fb_reserved_mib=g.fb_reserved_mib,
        pci_bus_id=pci_bus_id(g.index),
        driver_version=driver,
        gr_engine_active=g.gr_engine_active,
        pipe_tensor_active=g.pipe_tensor_active,
        dram_active=g.dram_active,
        pcie_tx_bytes_per_s=g.pcie_tx_bytes_per_s,
        pcie_rx_bytes_per_s=g.pcie_rx_bytes_per_s,
        nvlink_bandwidth_kib_total=g.nvlink_bandwidth_kib_total,
        vgpu_license_status=0,  # bare metal: no vGPU license (dcgm-exporter reports 0)
    )


def read_node(node: SimNode, at_s: float | None = None) -> NodeSample:
    """A ``NodeSample`` of one twin node (``up=False`` while it is powered off), stamped ``at_s`` (default:
    wall-clock now; the ``twin`` collector passes the twin's clock, the clock of its counters and XIDs)."""
    when = time.time() if at_s is None else at_s
    if not node.powered:
        return NodeSample(
            hostname=node.hostname,
            node_type=node.node_type,
            serial=node.serial,
            collected_at_s=when,
            up=False,
            problems=["node is powered off"],
        )
    return NodeSample(
        hostname=node.hostname,
        node_type=node.node_type,
        serial=node.serial,
        collected_at_s=when,
        gpus=[read_gpu(g, node.firmware.get("driver")) for g in node.gpus],
        ib_ports=[
            IBPortReading(
                device=p.device, port=p.port, state=p.state, rate_gbps=float(p.rate_gbps), counters=dict(p.counters)
            )
            for p in node.ib_ports
        ],
        nvme=[
            NVMeReading(
                name=d.name,
                media_errors=d.media_errors,
                percent_used=float(d.percent_used),
                read_gb_s_measured=d.read_gb_s_measured,
                write_gb_s_measured=d.write_gb_s_measured,
            )
            for d in node.nvme
        ],
        firmware=dict(node.firmware),
        booted_at_s=node.booted_at_s,
        problems=[f"gpu {g.index}: fallen off the bus" for g in node.gpus if not g.responsive],
    )


def twin_sample(region: SimRegion, hostname: str) -> NodeSample:
    """What the twin's hardware shows of ``hostname`` now: the region caught up to its clock, then the node
    read as a ``NodeSample`` stamped with the twin's clock. Unknown hostnames raise ``UnknownNameError``."""
    with region_lock(region):
        at_s = region.advance()
        node = region.node(hostname)
        return read_node(node, at_s)


def twin_telemetry(region: SimRegion, hostname: str) -> dict[str, Any]:
    """``twin_sample`` in its JSON form: ``velyrix up`` serves this at ``GET /v1/sim/nodes/{hostname}/telemetry``,
    where the ``twin`` collector of another process reads it (inside ``up`` it reads ``twin_sample``)."""
    return twin_sample(region, hostname).to_dict()


class SimCollector(Collector):
    """Collector over one twin node. With a ``region``, samples are stamped with the region's clock (the
    clock of the counters and the XID events: ``twin_clock``); ``advance=False`` reads the node where the
    region was last advanced to (the fleet exporter advances the region once per collection of all nodes)."""

    name = "sim"

    def __init__(self, node: SimNode, region: SimRegion | None = None, *, advance: bool = True):
        self.node = node
        self.region = region
        self.advance = advance
        self.twin_clock = region is not None

    def collect(self) -> NodeSample:
        """The node now; with a ``region``, caught up (unless ``advance`` is off) and stamped with the
        simulated time its counters stand at; without one with wall time."""
        if self.region is not None:
            if self.advance:
                catch_up(self.region)
            return read_node(self.node, self.region.advanced_at()[0])
        return read_node(self.node)


class SimProber(Prober):
    """Active tests on a twin node: what a GEMM / HBM stream would measure now (no time passes)."""

    def __init__(self, node: SimNode):
        self.node = node

    def _gpu(self, gpu: int) -> SimGPU:
        from velyrix import errors

        if not 0 <= gpu < len(self.node.gpus):
            raise errors.InvalidInputError(
                f"{self.node.hostname} has no GPU {gpu}", hint=f"valid: 0..{len(self.node.gpus) - 1}"
            )
        g = self.node.gpus[gpu]
        g.refresh_measured()
        return g

    def run_gemm(self, gpu: int, duration_s: float = 10.0) -> float:
        return float(self._gpu(gpu).bf16_tflops_measured)

    def run_memtest(self, gpu: int, duration_s: float = 10.0) -> float:
        return float(self._gpu(gpu).hbm_gb_s_measured)
