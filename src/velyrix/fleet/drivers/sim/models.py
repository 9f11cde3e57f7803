"""Constants of the twin: measurement noise and NVML bit values. GPU power and clocks per model are catalog
data (``gpus.toml``, ``velyrix.catalog.gpu_model``); the share of datasheet peaks that healthy parts measure
is ``velyrix.fleet.acceptance``'s (``*_SHARE_OF_PEAK``): acceptance expects it.

Sources per figure; "assumption" marks Velyrix design choices, not published measurements.
"""

from __future__ import annotations

NVME_EFFICIENCY = 1.0
"""Local NVMe figures in the catalog are already measured-style sequential figures (derived there)."""

NOISE = 0.01
"""Relative standard deviation of a healthy part's measurements (assumption: 1% run-to-run)."""

# NVML clocks-event (throttle) reason bits (nvml.h, nvmlClocksEventReason*).
THROTTLE_SW_POWER_CAP = 0x4
THROTTLE_HW_SLOWDOWN = 0x8
THROTTLE_SW_THERMAL = 0x20
THROTTLE_HW_THERMAL = 0x40
