"""The twin's devices: GPUs with NVML-like counters, InfiniBand ports with sysfs counters, NVMe drives,
BMCs, and the node that holds them. Attributes are plain and public: the agent's ``sim`` collector and the
health checks read them directly (names shared with the agent and health: docs/architecture.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Never

from velyrix.catalog import records
from velyrix.catalog.gpu_counters import GpuCounters
from velyrix.fleet import acceptance, hardware
from velyrix.fleet.drivers.sim import models

IB_COUNTERS = (
    "symbol_error",
    "link_downed",
    "port_rcv_errors",
    "port_xmit_wait",
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
    "link_error_recovery",
)
"""Counter file names under /sys/class/infiniband/<dev>/ports/<port>/counters/ that the twin keeps."""

# The twin's training workload, as profiling counters see it at 100% utilization (shape assumptions of
# the twin, not measurements): share of busy cycles in tensor pipes, NVLink and PCIe traffic per GPU.
TENSOR_SHARE_OF_BUSY = 0.55
NVLINK_SHARE_OF_PEAK = 0.25
NVLINK_GB_S_PER_LINK = 50.0  # 18 links x 50 GB/s = 900 GB/s per H100/H200 (catalog node_types nvlink_gb_s)
PCIE_BYTES_PER_S_AT_FULL_LOAD = 2.0e9  # input pipeline and checkpoint staging, per direction
FB_RESERVED_SHARE = 0.004  # driver-reserved framebuffer (NVML nvmlMemory_v2 ``reserved``)


@dataclass(eq=False)
class SimGPU(GpuCounters[Never]):
    """One GPU. Field meanings and units follow NVML (``nvmlDeviceGet*``); counters only grow. The health
    counters (ECC, row remaps, NVLink, PCIe, clock events) come from ``catalog.gpu_counters.GpuCounters``."""

    index: int
    uuid: str
    serial: str
    name: str
    model: records.GPUModel
    fb_total_mib: int
    peak_bf16_tflops: float
    peak_hbm_gb_s: float
    temperature_c: float = 32.0
    memory_temperature_c: float = 36.0
    power_w: float = 80.0
    energy_mj: float = 0.0
    sm_clock_mhz: int = 345
    mem_clock_mhz: int = 2619
    utilization_pct: float = 0.0
    mem_copy_util_pct: float = 0.0
    fb_used_mib: int = 0
    fb_free_mib: int = 0
    xid_events: list[tuple[float, int]] = field(default_factory=list)
    bf16_tflops_measured: float = 0.0
    hbm_gb_s_measured: float = 0.0
    responsive: bool = True
    # profiling counters (dcgm-exporter's DCGM_FI_PROF_* defaults) and the rest of its default set
    enc_util_pct: float = 0.0
    dec_util_pct: float = 0.0
    fb_reserved_mib: int = 0
    gr_engine_active: float = 0.0
    pipe_tensor_active: float = 0.0
    dram_active: float = 0.0
    pcie_tx_bytes_per_s: float = 0.0
    pcie_rx_bytes_per_s: float = 0.0
    nvlink_bandwidth_kib_total: int = 0
    # health factors the faults set (1.0 = healthy); the *_measured fields derive from them
    compute_factor: float = 1.0
    thermal_offset_c: float = 0.0
    _noise: tuple[float, float] = (1.0, 1.0)

    def refresh_measured(self) -> None:
        """Recompute what a GEMM / HBM copy test would measure now from peaks, efficiency and faults."""
        if not self.responsive:
            self.bf16_tflops_measured = 0.0
            self.hbm_gb_s_measured = 0.0
            return
        self.bf16_tflops_measured = (
            self.peak_bf16_tflops * acceptance.GEMM_SHARE_OF_PEAK * self._noise[0] * self.compute_factor
        )
        self.hbm_gb_s_measured = (
            self.peak_hbm_gb_s
            * acceptance.HBM_SHARE_OF_PEAK
            * self._noise[1]
            * min(1.0, 0.5 + 0.5 * self.compute_factor)
        )

    def reset(self) -> None:
        """A GPU reset: volatile ECC counts clear, a pending row remap is applied (the remap stays counted)."""
        self.ecc_sbe_volatile = 0
        self.ecc_dbe_volatile = 0
        self.remap_pending = False

    def add_xid(self, at_s: float, xid: int) -> None:
        self.xid_events.append((at_s, xid))

    def step(self, dt_s: float, load_pct: float) -> None:
        """Advance the gauges and energy counter by ``dt_s`` seconds at ``load_pct`` utilization."""
        if not self.responsive:
            self.utilization_pct = 0.0
            self.power_w = 0.0
            self.gr_engine_active = self.pipe_tensor_active = self.dram_active = 0.0
            self.pcie_tx_bytes_per_s = self.pcie_rx_bytes_per_s = 0.0
            return
        util = max(0.0, min(100.0, load_pct))
        self._step_profiling(dt_s, util)
        self.utilization_pct = util
        self.mem_copy_util_pct = util * 0.6
        self.power_w = self.model.idle_w + (self.model.tdp_w - self.model.idle_w) * util / 100.0 * self.compute_factor
        self.energy_mj += self.power_w * dt_s * 1000.0
        self.temperature_c = 32.0 + 38.0 * util / 100.0 + self.thermal_offset_c
        self.memory_temperature_c = self.temperature_c + 4.0
        busy = util > 0
        clock = self.model.max_sm_clock_mhz if busy else self.model.idle_sm_clock_mhz
        if self.throttle_reasons & (models.THROTTLE_HW_THERMAL | models.THROTTLE_HW_SLOWDOWN):
            clock = int(clock * self.compute_factor)
        self.sm_clock_mhz = clock
        self.fb_used_mib = int(self.fb_total_mib * 0.9) if busy else 0
        self.fb_reserved_mib = int(self.fb_total_mib * FB_RESERVED_SHARE)
        self.fb_free_mib = self.fb_total_mib - self.fb_used_mib - self.fb_reserved_mib

    def _step_profiling(self, dt_s: float, util: float) -> None:
        """Profiling ratios follow the utilization; a slow GPU (``compute_factor``) does less tensor work."""
        share = util / 100.0
        self.gr_engine_active = share
        self.pipe_tensor_active = share * TENSOR_SHARE_OF_BUSY * self.compute_factor
        self.dram_active = share * 0.6
        self.pcie_tx_bytes_per_s = self.pcie_rx_bytes_per_s = share * PCIE_BYTES_PER_S_AT_FULL_LOAD
        nvlink_bytes_s = self.nvlink_links_up * NVLINK_GB_S_PER_LINK * 1e9 * NVLINK_SHARE_OF_PEAK * share
        self.nvlink_bandwidth_kib_total += int(nvlink_bytes_s * dt_s / 1024)

    def info(self) -> hardware.GPUInfo:
        return hardware.GPUInfo(
            index=self.index,
            uuid=self.uuid,
            serial=self.serial,
            model=self.name,
            memory_gb=round(self.fb_total_mib * 2**20 / 1e9, 1),
        )


@dataclass(eq=False)
class SimIBPort:
    """One InfiniBand HCA port (``/sys/class/infiniband/{device}/ports/{port}``); on an Ethernet compute fabric
    (Spectrum-X) the same port runs RoCE (the driver reports its link layer from the node's networks)."""

    device: str
    port: int
    state: str
    rate_gbps: int
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(IB_COUNTERS, 0))
    mac: str = ""
    firmware: str = ""

    def step(self, dt_s: float, load_pct: float) -> None:
        """Traffic counters: sysfs *_data count octets / 4; packets assume a 4 KiB IB MTU."""
        if self.state != "ACTIVE" or load_pct <= 0:
            return
        octets = int(self.rate_gbps * 1e9 / 8 * dt_s * load_pct / 100.0 * 0.5)
        for direction in ("xmit", "rcv"):
            self.counters[f"port_{direction}_data"] += octets // 4
            self.counters[f"port_{direction}_packets"] += octets // 4096


@dataclass(eq=False)
class SimNVMe:
    """One local NVMe drive: sequential bandwidth a test would measure now (GB/s), SMART counters."""

    name: str
    serial: str
    capacity_tb: float
    read_gb_s_measured: float
    write_gb_s_measured: float
    media_errors: int = 0
    percent_used: int = 1
    healthy_read_gb_s: float = 0.0
    healthy_write_gb_s: float = 0.0


@dataclass(eq=False)
class SimBMC:
    """The node's baseboard management controller (out-of-band, Redfish in real life)."""

    address: str
    mac: str
    firmware: str


@dataclass(eq=False)
class SimNode:
    """One simulated server of a catalog node type, with its place in the region."""

    hostname: str
    node_type: str
    serial: str
    bmc: SimBMC
    gpus: list[SimGPU]
    ib_ports: list[SimIBPort]
    nvme: list[SimNVMe]
    firmware: dict[str, str]
    powered: bool = True
    position: hardware.Position | None = None
    other_nics: list[hardware.NICInfo] = field(default_factory=list)
    load_pct: float = 0.0
    """GPU utilization the node's workload drives (0 idle, 100 flat out); set by tests and the ops twin."""
    # what the driver has applied (the twin's "ground truth" of provisioning)
    image: str | None = None
    networks: dict[str, Any] | None = None
    mounts: list[str] = field(default_factory=list)
    tenant_data: bool = False
    booted_at_s: float = 0.0
    """When the node last booted (twin clock, s): a reboot starts a new kernel log, so XIDs before it are
    gone from the node's own view (the control plane keeps its history)."""
    _stepped_load: float | None = None

    def reboot(self, at_s: float) -> None:
        """Power-cycle: every GPU is reset and one that fell off the bus (XID 79) is back on it; the kernel
        log (the XID events) starts over."""
        self.powered = True
        self.booted_at_s = at_s
        for gpu in self.gpus:
            gpu.responsive = True
            gpu.reset()
            gpu.xid_events.clear()
            gpu.refresh_measured()
            gpu.step(0.0, self.load_pct)

    def hardware(self) -> hardware.NodeHardware:
        """The inventory inspection reports."""
        nics = tuple(
            hardware.NICInfo(
                device=p.device, role="compute", speed_gbps=p.rate_gbps, mac=p.mac, rail=i, firmware=p.firmware
            )
            for i, p in enumerate(self.ib_ports)
        )
        return hardware.NodeHardware(
            hostname=self.hostname,
            node_type=self.node_type,
            serial=self.serial,
            gpus=tuple(g.info() for g in self.gpus),
            nics=nics + tuple(self.other_nics),
            bmc=hardware.BMCInfo(address=self.bmc.address, mac=self.bmc.mac, firmware=self.bmc.firmware),
            nvme=tuple(hardware.NVMeInfo(name=d.name, serial=d.serial, capacity_tb=d.capacity_tb) for d in self.nvme),
            firmware=dict(self.firmware),
            position=self.position,
        )

    def step(self, dt_s: float) -> None:
        """Advance every device's steady-state counters by ``dt_s`` seconds."""
        if not self.powered:
            return
        load = self.load_pct
        if load == 0.0 and self._stepped_load == 0.0:
            # idle and already settled: gauges do not move (faults and trends re-step the GPUs they touch),
            # only the energy counter grows; this keeps month-long fleet simulations cheap
            for gpu in self.gpus:
                if gpu.responsive:
                    gpu.energy_mj += gpu.power_w * dt_s * 1000.0
            return
        for gpu in self.gpus:
            gpu.step(dt_s, load)
        for port in self.ib_ports:
            port.step(dt_s, load)
        self._stepped_load = load
