"""Profiling fields on real GPUs through NVML GPU Performance Monitoring (GPM, Hopper and later).

dcgm-exporter's default ``DCGM_FI_PROF_*`` fields come from DCGM's profiling module; NVML exposes the same
quantities as GPM metrics, computed between two samples of the GPU's counters. ``GpmReader.read`` keeps
each GPU's previous sample and returns, per GPU, the ratios and rates over the time since the last call
(nothing on the first call or on GPUs without GPM support):

- ``gr_engine_active``: ``NVML_GPM_METRIC_GRAPHICS_UTIL`` / 100 (ratio of time the graphics/compute
  engine was active, DCGM_FI_PROF_GR_ENGINE_ACTIVE);
- ``pipe_tensor_active``: ``NVML_GPM_METRIC_ANY_TENSOR_UTIL`` / 100 (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE);
- ``dram_active``: ``NVML_GPM_METRIC_DRAM_BW_UTIL`` / 100 (DCGM_FI_PROF_DRAM_ACTIVE);
- ``pcie_tx_bytes_per_s`` / ``pcie_rx_bytes_per_s``: ``NVML_GPM_METRIC_PCIE_TX/RX_PER_SEC`` (MiB/s in
  NVML) x 2**20 (DCGM_FI_PROF_PCIE_TX/RX_BYTES, bytes per second).

Also here: the NVLink bandwidth counter (``NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX`` + ``_RX``, KiB, for
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL), the PCI bus id and the driver version (labels of every GPU series).
Every call is independent: an unsupported one leaves its fields ``None``.
"""

from __future__ import annotations

from typing import Any

from velyrix.agent.collectors.base import GPUReading

MIB = 1024 * 1024
KIB = 1024
GPM_FIELDS: tuple[tuple[str, str, float], ...] = (
    ("gr_engine_active", "NVML_GPM_METRIC_GRAPHICS_UTIL", 0.01),
    ("pipe_tensor_active", "NVML_GPM_METRIC_ANY_TENSOR_UTIL", 0.01),
    ("dram_active", "NVML_GPM_METRIC_DRAM_BW_UTIL", 0.01),
    ("pcie_tx_bytes_per_s", "NVML_GPM_METRIC_PCIE_TX_PER_SEC", float(MIB)),
    ("pcie_rx_bytes_per_s", "NVML_GPM_METRIC_PCIE_RX_PER_SEC", float(MIB)),
)
"""(GPUReading attribute, pynvml GPM metric constant, scale to the reading's unit)."""


class GpmReader:
    """Profiling ratios and rates of each GPU between consecutive ``read`` calls (see the module doc)."""

    def __init__(self, nvml: Any):
        self.nv = nvml
        self._previous: dict[int, Any] = {}
        self._unsupported: set[int] = set()

    def _supported(self, index: int, handle: Any) -> bool:
        if index in self._unsupported:
            return False
        try:
            ok = bool(self.nv.nvmlGpmQueryDeviceSupport(handle).isSupportedDevice)
        except (self.nv.NVMLError, AttributeError):
            ok = False
        if not ok:
            self._unsupported.add(index)
        return ok

    def read(self, index: int, handle: Any, reading: GPUReading, problems: set[str]) -> None:
        """Fill ``reading``'s GPM fields from the samples of this call and the previous one."""
        nv = self.nv
        if not self._supported(index, handle):
            return
        try:
            sample = nv.nvmlGpmSampleGet(handle, nv.nvmlGpmSampleAlloc())
        except nv.NVMLError as exc:
            problems.add(f"gpu {index} GPM sample: {exc}")
            return
        previous = self._previous.get(index)
        self._previous[index] = sample
        if previous is None:
            return
        try:
            request = nv.c_nvmlGpmMetricsGet_t()
            request.version = nv.NVML_GPM_METRICS_GET_VERSION
            request.numMetrics = len(GPM_FIELDS)
            request.sample1, request.sample2 = previous, sample
            for i, (_, constant, _) in enumerate(GPM_FIELDS):
                request.metrics[i].metricId = getattr(nv, constant)
            nv.nvmlGpmMetricsGet(request)
        except nv.NVMLError as exc:
            problems.add(f"gpu {index} GPM metrics: {exc}")
            return
        finally:
            try:
                nv.nvmlGpmSampleFree(previous)
            except nv.NVMLError:
                pass
        for i, (attr, _, scale) in enumerate(GPM_FIELDS):
            metric = request.metrics[i]
            if metric.nvmlReturn == 0:
                setattr(reading, attr, float(metric.value) * scale)


def read_identity(nv: Any, handle: Any, reading: GPUReading, driver: str | None) -> None:
    """PCI bus id, driver version and the NVLink bandwidth counter of one GPU (``None`` when unsupported)."""
    reading.driver_version = driver
    try:
        bus = nv.nvmlDeviceGetPciInfo(handle).busId
        reading.pci_bus_id = bus.decode() if isinstance(bus, bytes) else str(bus)
    except nv.NVMLError:
        reading.pci_bus_id = None
    try:
        values = nv.nvmlDeviceGetFieldValues(
            handle, [nv.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, nv.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX]
        )
    except nv.NVMLError:
        return
    if all(v.nvmlReturn == 0 for v in values):
        reading.nvlink_bandwidth_kib_total = sum(int(v.value.ullVal) for v in values)


def driver_version(nv: Any) -> str | None:
    """The NVIDIA driver version (``nvmlSystemGetDriverVersion``), or ``None``."""
    try:
        version = nv.nvmlSystemGetDriverVersion()
    except nv.NVMLError:
        return None
    return version.decode() if isinstance(version, bytes) else str(version)
