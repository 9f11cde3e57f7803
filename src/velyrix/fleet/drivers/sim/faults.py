"""Faults of the twin: what each kind does to a node, and the precursor trends that announce some of them.

A ``Fault`` is injected on demand (``SimRegion.inject``, ``POST /v1/sim/faults``, ``velyrix sim inject``) or
spontaneously at the catalog's failure rates (``velyrix.catalog.failure_rates()``). Causes flagged
``precursor = true`` in the catalog first run a ``Trend`` (rising single-bit ECC before a DBE, remaps before a
remap failure, link errors before a link drops, temperature before a thermal trip, media errors before a slow
disk), then the terminal fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.catalog import faults as catalog_faults
from velyrix.catalog import health as catalog_health
from velyrix.fleet.drivers.sim import models
from velyrix.fleet.drivers.sim.devices import SimGPU, SimNode

KINDS = tuple(catalog_faults.fault_kinds())
"""Fault kinds the twin knows (``catalog/data/faults.toml``)."""

CAUSE_FAULTS: dict[str, tuple[str, int | None]] = {
    name: (c.kind, c.xid) for name, c in catalog_faults.cause_faults().items()
}
"""Catalog cause (failure_rates.toml) -> (fault kind, xid for kind "xid"): ``faults.toml`` ``[cause]``."""

TRENDS: dict[str, tuple[str, float]] = {
    k.name: (k.precursor, k.precursor_rate_per_h)
    for k in catalog_faults.fault_kinds().values()
    if k.precursor is not None
}
"""Fault kind -> the precursor trend that announces it, with its rate per simulated hour (``faults.toml``)."""


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
    cause: str | None = None
    """The failure cause it stands for (spontaneous faults; None when injected by hand)."""


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


def _device(node: SimNode, fault: Fault, kind: catalog_faults.FaultKind) -> Any:
    if kind.device == "ib_port":
        return node.ib_ports[fault.port or 0]
    if kind.device == "nvme":
        return node.nvme[fault.drive or 0]
    return _gpu(node, fault)


def _add(device: Any, counts: Mapping[str, float]) -> None:
    """Increase counters (never below 0); ``counters.NAME`` is an entry of the device's ``counters``."""
    for attr, amount in counts.items():
        if attr.startswith("counters."):
            key = attr.removeprefix("counters.")
            device.counters[key] = max(0, device.counters[key] + amount)
        else:
            setattr(device, attr, max(0, getattr(device, attr) + amount))


def _effects(device: Any, kind: catalog_faults.FaultKind, factor: float | None) -> None:
    """Apply the catalog effects of ``kind`` to ``device`` (see ``faults.toml``)."""
    _add(device, kind.add)
    for attr, value in kind.assign.items():
        setattr(device, attr, value)
    for attr, value in kind.at_least.items():
        setattr(device, attr, max(getattr(device, attr), value))
    f = factor if factor is not None else kind.factor_default
    for attr in kind.factor_set:
        setattr(device, attr, f)
    for attr in kind.factor_at_most:
        setattr(device, attr, min(getattr(device, attr), f))
    for attr, healthy in kind.factor_scales.items():
        setattr(device, attr, getattr(device, healthy) * f)
    for reason in kind.throttle:
        device.throttle_reasons |= getattr(models, f"THROTTLE_{reason}")


def apply(node: SimNode, fault: Fault, now_s: float) -> None:
    """Make ``fault`` happen on ``node`` at simulated time ``now_s``: the effects of its kind in
    ``catalog/data/faults.toml``; an XID fault raises its XID with that XID's ``twin_set``/``twin_add`` of
    ``xids.toml``."""
    validate(node, fault)
    gpu = _gpu(node, fault)
    kind = catalog_faults.fault_kinds()[fault.kind]
    _effects(_device(node, fault, kind), kind, fault.factor)
    for code in kind.xids:
        gpu.add_xid(now_s, code)
    if fault.kind == "xid":
        assert fault.xid is not None
        gpu.add_xid(now_s, fault.xid)
        if fault.xid in catalog_health.xid_codes():
            info = catalog_health.xid(fault.xid)
            _add(gpu, info.twin_add)
            for attr, value in info.twin_set.items():
                setattr(gpu, attr, value)
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
