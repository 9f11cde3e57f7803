"""Faults of the twin: what each kind does to a node, and the precursor trends that announce some of them.

A ``Fault`` is injected on demand (``SimRegion.inject``, ``POST /v1/sim/faults``, ``velyrix sim inject``) or
spontaneously at the catalog's failure rates (``velyrix.catalog.failure_rates()``). Causes flagged
``precursor = true`` in the catalog first run a ``Trend`` (rising single-bit ECC before a DBE, remaps before a
remap failure, link errors before a link drops, temperature before a thermal trip, media errors before a slow
disk), then the terminal fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from velyrix import errors
from velyrix.fleet.drivers.sim import models
from velyrix.fleet.drivers.sim.devices import SimGPU, SimNode

KINDS = ("xid", "ecc_dbe", "ecc_sbe_storm", "slow_gpu", "ib_down", "slow_disk", "remap_failure", "nvlink", "thermal")
"""Fault kinds the twin knows."""

# Catalog cause (failure_rates.toml) -> (fault kind, xid for kind "xid", precursor trend kind or None).
# Causes the twin has no device for (host, PSU, chassis, CPU, RAM...) surface the way they reach a training job:
# the GPUs drop off the bus (XID 79). Software causes surface as the XID the application sees.
CAUSE_FAULTS: dict[str, tuple[str, int | None]] = {
    "faulty_gpu": ("xid", 79),
    "gpu_hbm3_memory": ("ecc_dbe", None),  # precursor: single-bit ECC storm
    "software_bug": ("xid", 13),
    "network_switch_cable": ("ib_down", None),  # precursor: symbol errors / link recoveries
    "unplanned_host_maintenance": ("xid", 79),
    "gpu_sram_memory": ("remap_failure", None),  # precursor: remaps filling a bank
    "gpu_system_processor": ("xid", 119),
    "nic": ("ib_down", None),  # precursor: link errors
    "nccl_watchdog_timeout": ("xid", 109),
    "silent_data_corruption": ("slow_gpu", None),  # found by GEMM-vs-peer checks: results/speed off
    "gpu_thermal_interface_sensor": ("thermal", None),  # precursor: rising temperature
    "ssd": ("slow_disk", None),  # precursor: media errors
    "power_supply": ("xid", 79),
    "server_chassis": ("xid", 79),
    "io_expansion_board": ("xid", 79),
    "dependency": ("xid", 79),
    "cpu": ("xid", 79),
    "system_memory": ("xid", 79),
}

# Fault kind -> the precursor trend that announces it, with its rate per simulated hour.
TRENDS: dict[str, tuple[str, float]] = {
    "ecc_dbe": ("ecc_sbe", 2000.0),  # correctable ECC climbing (XID 92 "high SBE rate" fires on the way)
    "remap_failure": ("remap", 1.5),  # uncorrectable-row remaps filling a bank (8 per bank; REFERENCE §3)
    "ib_down": ("link_errors", 200.0),  # symbol errors, with link_error_recovery every ~50
    "thermal": ("temperature", 4.0),  # degrees C per hour
    "slow_disk": ("media_errors", 3.0),
}


@dataclass(frozen=True)
class Fault:
    """A fault to inject. ``gpu``/``port``/``drive`` pick the device (index; 0 when absent);
    ``xid`` is required for kind ``xid``; ``factor`` scales performance for slow_gpu/slow_disk/thermal."""

    kind: str
    gpu: int | None = None
    xid: int | None = None
    port: int | None = None
    drive: int | None = None
    factor: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise errors.UnknownNameError("fault kind", self.kind, KINDS)
        if self.kind == "xid" and self.xid is None:
            raise errors.InvalidInputError("a fault of kind 'xid' needs an xid number", hint="e.g. --xid 79")
        if self.factor is not None and not 0.0 <= self.factor <= 1.0:
            raise errors.InvalidInputError(f"factor must be within 0..1, got {self.factor}")

    def to_dict(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class Trend:
    """A precursor in progress on one device: ``rate_per_h`` until ``until_s``, then ``fault`` fires."""

    hostname: str
    kind: str
    fault: Fault
    rate_per_h: float
    started_s: float
    until_s: float
    last_s: float
    carry: float = field(default=0.0)


def _gpu(node: SimNode, fault: Fault) -> SimGPU:
    index = fault.gpu or 0
    if not 0 <= index < len(node.gpus):
        raise errors.InvalidInputError(f"node '{node.hostname}' has GPUs 0-{len(node.gpus) - 1}, not {index}")
    return node.gpus[index]


def validate(node: SimNode, fault: Fault) -> None:
    """Check the device indices of ``fault`` against ``node`` (raises ``InvalidInputError``)."""
    _gpu(node, fault)
    if fault.port is not None and not 0 <= fault.port < len(node.ib_ports):
        raise errors.InvalidInputError(f"node '{node.hostname}' has IB ports 0-{len(node.ib_ports) - 1}")
    if fault.drive is not None and not 0 <= fault.drive < len(node.nvme):
        raise errors.InvalidInputError(f"node '{node.hostname}' has NVMe drives 0-{len(node.nvme) - 1}")


def apply(node: SimNode, fault: Fault, now_s: float) -> None:
    """Make ``fault`` happen on ``node`` at simulated time ``now_s``."""
    validate(node, fault)
    gpu = _gpu(node, fault)
    kind = fault.kind
    if kind == "xid":
        assert fault.xid is not None
        gpu.add_xid(now_s, fault.xid)
        if fault.xid == 79:  # fallen off the bus: gone until reboot/repair
            gpu.responsive = False
        elif fault.xid in (48, 94, 95):
            gpu.ecc_dbe_volatile += 1
            gpu.ecc_dbe_aggregate += 1
    elif kind == "ecc_dbe":
        gpu.ecc_dbe_volatile += 1
        gpu.ecc_dbe_aggregate += 1
        gpu.remapped_rows_uncorrectable += 1
        gpu.remap_pending = True
        gpu.remap_bank_max = max(gpu.remap_bank_max, 1)
        gpu.retired_pages += 1
        gpu.add_xid(now_s, 48)
        gpu.add_xid(now_s, 63)
    elif kind == "ecc_sbe_storm":
        gpu.ecc_sbe_volatile += 50_000
        gpu.ecc_sbe_aggregate += 50_000
        gpu.add_xid(now_s, 92)
    elif kind == "slow_gpu":
        gpu.compute_factor = fault.factor if fault.factor is not None else 0.6
        gpu.throttle_reasons |= models.THROTTLE_HW_SLOWDOWN
    elif kind == "ib_down":
        port = node.ib_ports[fault.port or 0]
        port.state = "DOWN"
        port.counters["link_downed"] += 1
    elif kind == "slow_disk":
        drive = node.nvme[fault.drive or 0]
        factor = fault.factor if fault.factor is not None else 0.3
        drive.read_gb_s_measured = drive.healthy_read_gb_s * factor
        drive.write_gb_s_measured = drive.healthy_write_gb_s * factor
    elif kind == "remap_failure":
        gpu.remap_failure = True
        gpu.remap_bank_max = 8
        gpu.remapped_rows_uncorrectable += 1
        gpu.add_xid(now_s, 64)
    elif kind == "nvlink":
        gpu.nvlink_links_up = max(0, gpu.nvlink_links_up - 1)
        gpu.nvlink_crc_errors += 1000
        gpu.nvlink_replay_errors += 100
        gpu.nvlink_recovery_errors += 1
        gpu.add_xid(now_s, 74)
    elif kind == "thermal":
        gpu.thermal_offset_c = max(gpu.thermal_offset_c, 55.0)
        gpu.compute_factor = min(gpu.compute_factor, fault.factor if fault.factor is not None else 0.7)
        gpu.throttle_reasons |= models.THROTTLE_HW_THERMAL | models.THROTTLE_SW_THERMAL
    gpu.refresh_measured()
    gpu.step(0.0, node.load_pct)


def advance_trend(node: SimNode, trend: Trend, to_s: float) -> None:
    """Accumulate ``trend``'s precursor signal on ``node`` from its last update to ``to_s``."""
    dt_h = max(0.0, min(to_s, trend.until_s) - trend.last_s) / 3600.0
    trend.last_s = max(trend.last_s, min(to_s, trend.until_s))
    amount = trend.rate_per_h * dt_h + trend.carry
    whole = int(amount)
    trend.carry = amount - whole
    fault = trend.fault
    gpu = node.gpus[fault.gpu or 0]
    if trend.kind == "ecc_sbe" and whole:
        before = gpu.ecc_sbe_volatile
        gpu.ecc_sbe_volatile += whole
        gpu.ecc_sbe_aggregate += whole
        if before < 1000 <= gpu.ecc_sbe_volatile:
            gpu.add_xid(trend.last_s, 92)
    elif trend.kind == "remap":
        for _ in range(whole):
            if gpu.remap_bank_max >= 7:  # the eighth and the failing ninth come with the terminal fault
                break
            gpu.remapped_rows_uncorrectable += 1
            gpu.remap_bank_max += 1
            gpu.remap_pending = True
            gpu.add_xid(trend.last_s, 63)
    elif trend.kind == "link_errors" and whole:
        port = node.ib_ports[fault.port or 0]
        port.counters["symbol_error"] += whole
        port.counters["port_rcv_errors"] += whole // 10
        port.counters["link_error_recovery"] += whole // 50
    elif trend.kind == "temperature":
        gpu.thermal_offset_c = min(40.0, trend.rate_per_h * (trend.last_s - trend.started_s) / 3600.0)
        gpu.step(0.0, node.load_pct)
    elif trend.kind == "media_errors" and whole:
        node.nvme[fault.drive or 0].media_errors += whole


def repair(node: SimNode, now_s: float) -> None:
    """Replace every faulty part of ``node`` (the RMA came back): counters that live on the part reset."""
    for gpu in node.gpus:
        if (
            gpu.responsive
            and gpu.compute_factor == 1.0
            and not gpu.remap_failure
            and gpu.ecc_dbe_volatile == 0
            and gpu.nvlink_links_up == gpu.model.nvlink_links
            and gpu.thermal_offset_c == 0.0
        ):
            continue
        gpu.responsive = True
        gpu.compute_factor = 1.0
        gpu.thermal_offset_c = 0.0
        gpu.throttle_reasons = 0
        gpu.ecc_sbe_volatile = gpu.ecc_dbe_volatile = gpu.ecc_sbe_aggregate = gpu.ecc_dbe_aggregate = 0
        gpu.remapped_rows_correctable = gpu.remapped_rows_uncorrectable = gpu.remap_bank_max = 0
        gpu.remap_pending = gpu.remap_failure = False
        gpu.retired_pages = gpu.sram_uncorrectable = 0
        gpu.nvlink_links_up = gpu.model.nvlink_links
        gpu.serial = gpu.serial + "R"
        gpu.refresh_measured()
        gpu.step(0.0, node.load_pct)
    for port in node.ib_ports:
        port.state = "ACTIVE"
    for drive in node.nvme:
        drive.read_gb_s_measured = drive.healthy_read_gb_s
        drive.write_gb_s_measured = drive.healthy_write_gb_s
        drive.media_errors = 0
