"""dcgm-exporter's field set as Velyrix exports it: metric definitions and the labels of a GPU series.

Parity target: dcgm-exporter 4.5.3-4.8.2 (NVIDIA/dcgm-exporter, tag ``4.5.3-4.8.2``, May 2026), whose
``etc/default-counters.csv`` is vendored as tests/agent/fixtures/dcgm-exporter-4.5.3-4.8.2-default-counters.csv
and checked against a scrape in tests/agent/test_dcgm_parity.py. Every GPU series carries dcgm-exporter's
labels ``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname`` and the label field
``DCGM_FI_DRIVER_VERSION``, then the job labels: ``pod``/``namespace``/``container`` for Kubernetes pods
(dcgm-exporter's ``--kubernetes`` mode), ``hpc_job`` for scheduler jobs (its ``--hpc-job-mapping-dir``).
What the default set leaves out is exported under ``velyrix_*`` names (see agent/exporter.py).
"""

from __future__ import annotations

from dataclasses import dataclass

DCGM_EXPORTER_RELEASE = "4.5.3-4.8.2"
DRIVER_LABEL = "DCGM_FI_DRIVER_VERSION"
XID_COUNT_METRIC = "DCGM_EXP_XID_ERRORS_COUNT"


@dataclass(frozen=True)
class MetricDef:
    """One exported metric: name, Prometheus type, help text and the reading attribute it shows."""

    name: str
    type: str
    help: str
    attr: str
    scale: float = 1.0


GPU_METRICS: tuple[MetricDef, ...] = (
    MetricDef("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", "sm_clock_mhz"),
    MetricDef("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", "mem_clock_mhz"),
    MetricDef("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", "memory_temperature_c"),
    MetricDef("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "temperature_c"),
    MetricDef("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power_w"),
    MetricDef(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", "energy_mj"
    ),
    MetricDef("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", "pcie_replay"),
    MetricDef("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "utilization_pct"),
    MetricDef("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", "mem_copy_util_pct"),
    MetricDef("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", "enc_util_pct"),
    MetricDef("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", "dec_util_pct"),
    MetricDef(
        "DCGM_FI_DEV_XID_ERRORS",
        "gauge",
        "Value of the last XID error encountered (see velyrix_gpu_xid_errors_total for counts).",
        "last_xid",
    ),
    MetricDef("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "fb_free_mib"),
    MetricDef("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "fb_used_mib"),
    MetricDef("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", "fb_reserved_mib"),
    MetricDef(
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "counter",
        "Total number of single-bit volatile ECC errors.",
        "ecc_sbe_volatile",
    ),
    MetricDef(
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "counter",
        "Total number of double-bit volatile ECC errors.",
        "ecc_dbe_volatile",
    ),
    MetricDef(
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "counter",
        "Total number of single-bit persistent ECC errors.",
        "ecc_sbe_aggregate",
    ),
    MetricDef(
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "counter",
        "Total number of double-bit persistent ECC errors.",
        "ecc_dbe_aggregate",
    ),
    MetricDef(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors.",
        "remapped_rows_uncorrectable",
    ),
    MetricDef(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for correctable errors.",
        "remapped_rows_correctable",
    ),
    MetricDef("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed.", "remap_failure"),
    MetricDef(
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "gauge",
        "Whether remapping of rows is pending (reset to apply).",
        "remap_pending",
    ),
    MetricDef(
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink flow-control CRC errors.",
        "nvlink_crc_errors",
    ),
    MetricDef(
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink retries.",
        "nvlink_replay_errors",
    ),
    MetricDef(
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "counter",
        "Total number of NVLink recovery errors.",
        "nvlink_recovery_errors",
    ),
    MetricDef(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "gauge",
        "Current clock event reasons (NVML bitmask; see velyrix_gpu_throttle_active).",
        "throttle_reasons",
    ),
    MetricDef(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        "Total NVLink data moved over all links (in KiB).",
        "nvlink_bandwidth_kib_total",
    ),
    MetricDef(
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU license status (0 on bare metal).", "vgpu_license_status"
    ),
    MetricDef(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", "gr_engine_active"
    ),
    MetricDef(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "gauge",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        "pipe_tensor_active",
    ),
    MetricDef(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        "dram_active",
    ),
    MetricDef(
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "gauge",
        "Rate of data transmitted over PCIe, headers and payload (in bytes per second).",
        "pcie_tx_bytes_per_s",
    ),
    MetricDef(
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        "gauge",
        "Rate of data received over PCIe, headers and payload (in bytes per second).",
        "pcie_rx_bytes_per_s",
    ),
    MetricDef("velyrix_gpu_nvlink_links_up", "gauge", "NVLink links in the active state.", "nvlink_links_up"),
    MetricDef(
        "velyrix_gpu_row_remap_bank_max",
        "gauge",
        "Most row remaps used in any one memory bank (8 per bank on Ampere/Hopper).",
        "remap_bank_max",
    ),
    MetricDef(
        "velyrix_gpu_sram_uncorrectable_errors_total",
        "counter",
        "Uncorrectable SRAM ECC errors (aggregate).",
        "sram_uncorrectable",
    ),
    MetricDef("velyrix_gpu_retired_pages", "gauge", "Pages retired for ECC errors (pre-Ampere).", "retired_pages"),
    MetricDef(
        "velyrix_gpu_responsive", "gauge", "1 when the GPU answers NVML, 0 when it fell off the bus.", "responsive"
    ),
)
