"""The GPU health counters, declared once: NVML's names and meanings (``nvmlDeviceGet*``), one type each.

Three records are built on ``GpuCounters`` by inheritance, in three layers that may all import the catalog:
the twin's ``SimGPU`` (``fleet/drivers/sim/devices.py``, the counters a simulated GPU keeps),
the agent's ``GPUReading`` (``agent/collectors/base.py``, what a collector read) and the health engine's
``GpuReading`` (``health/evidence.py``, what rules judge). The type parameter is what a counter holds when
the device did not report it: ``None`` for the agent's reading, ``Never`` (nothing: always a value) for the
twin and the health engine. Defaults are a healthy GPU's values.

Cumulative counters (``ecc_*``, ``remapped_rows_*``, ``retired_pages``, ``sram_uncorrectable``,
``nvlink_*_errors``, ``pcie_replay``) only grow until a reset; ``*_volatile`` counts clear at a GPU reset or
driver reload, ``*_aggregate`` persist on the board.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Generic, TypeVar

Absent = TypeVar("Absent")
"""What a counter holds when the device did not report it (``None``), or ``Never`` where it always has one."""


@dataclass(kw_only=True, eq=False)
class GpuCounters(Generic[Absent]):
    """One GPU's health counters (counts unless said otherwise). Keyword-only: the records built on it keep
    their own positional fields. ``eq=False``: each record says how it compares (the twin's GPUs by identity).
    """

    ecc_sbe_volatile: int | Absent = 0
    """Corrected (single-bit) ECC errors since the last reset (``NVML_VOLATILE_ECC``)."""
    ecc_dbe_volatile: int | Absent = 0
    """Uncorrected (double-bit) ECC errors since the last reset."""
    ecc_sbe_aggregate: int | Absent = 0
    """Corrected ECC errors over the board's life (``NVML_AGGREGATE_ECC``)."""
    ecc_dbe_aggregate: int | Absent = 0
    """Uncorrected ECC errors over the board's life."""
    remapped_rows_correctable: int | Absent = 0
    """HBM rows remapped for correctable errors (``nvmlDeviceGetRemappedRows``)."""
    remapped_rows_uncorrectable: int | Absent = 0
    """HBM rows remapped for uncorrectable errors."""
    remap_pending: bool | Absent = False
    """A row remap waits for a GPU reset to take effect."""
    remap_failure: bool | Absent = False
    """A row remap failed (an RMA criterion)."""
    remap_bank_max: int | Absent = 0
    """Remap slots used in the fullest bank (0-8; ``nvmlDeviceGetRowRemapperHistogram``)."""
    sram_uncorrectable: int | Absent = 0
    """Uncorrected SRAM ECC errors over the board's life (``NVML_MEMORY_LOCATION_SRAM``)."""
    retired_pages: int | Absent = 0
    """Framebuffer pages retired (multiple single-bit and double-bit causes; pre-Ampere mechanism)."""
    nvlink_crc_errors: int | Absent = 0
    """NVLink flit CRC errors, summed over links."""
    nvlink_replay_errors: int | Absent = 0
    """NVLink replays, summed over links."""
    nvlink_recovery_errors: int | Absent = 0
    """NVLink recoveries, summed over links."""
    nvlink_links_up: int | Absent = 18
    """NVLink links active (18 on H100/H200 SXM; the twin sets its model's count)."""
    pcie_replay: int | Absent = 0
    """PCIe replay counter (``nvmlDeviceGetPcieReplayCounter``)."""
    throttle_reasons: int | Absent = 0
    """Clock event reasons bitmask (``nvmlDeviceGetCurrentClocksEventReasons``)."""


COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in fields(GpuCounters))
"""Every counter's field name, in declaration order."""
