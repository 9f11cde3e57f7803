"""Per-GPU-model constants of the twin and its measurement noise. The share of datasheet peaks that
healthy parts measure is ``velyrix.fleet.acceptance``'s (``*_SHARE_OF_PEAK``): acceptance expects it.

Sources per figure; "assumption" marks Velyrix design choices, not published measurements.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GPUModel:
    tdp_w: float
    idle_w: float
    max_sm_clock_mhz: int
    idle_sm_clock_mhz: int
    mem_clock_mhz: int
    nvlink_links: int


GPU_MODELS: dict[str, GPUModel] = {
    # H100/H200 SXM5: 700 W TDP, 18 NVLink 4 links (NVIDIA H100/H200 datasheets); max SM clock 1,980 MHz
    # (nvidia-smi -q, H100 SXM5); HBM3 2,619 MHz (H100), HBM3e 3,201 MHz (H200, nvidia-smi); idle power
    # ~70-100 W (assumption from nvidia-smi readings reported publicly).
    "H100-SXM5-80GB": GPUModel(700.0, 75.0, 1980, 345, 2619, 18),
    "H200-SXM5-141GB": GPUModel(700.0, 80.0, 1980, 345, 3201, 18),
    # B200: 1,000 W (HGX B200 specification), NVLink 5: 18 links of 100 GB/s = 1.8 TB/s.
    "B200-180GB": GPUModel(1000.0, 120.0, 1965, 345, 3996, 18),
}
DEFAULT_MODEL = GPUModel(700.0, 80.0, 1980, 345, 2619, 18)

NVME_EFFICIENCY = 1.0
"""Local NVMe figures in the catalog are already measured-style sequential figures (derived there)."""

NOISE = 0.01
"""Relative standard deviation of a healthy part's measurements (assumption: 1% run-to-run)."""

# NVML clocks-event (throttle) reason bits (nvml.h, nvmlClocksEventReason*).
THROTTLE_SW_POWER_CAP = 0x4
THROTTLE_HW_SLOWDOWN = 0x8
THROTTLE_SW_THERMAL = 0x20
THROTTLE_HW_THERMAL = 0x40
