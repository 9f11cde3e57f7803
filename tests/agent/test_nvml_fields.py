"""The NVML collector's field handling, without a GPU: a stand-in for the pynvml module (the real
module's constants, error classes and structs; the driver calls answered from a table) checks that an
unsupported field stays None, a lost GPU is reported unresponsive and XID events are counted. The real
driver is exercised by the ``gpu``-marked test in test_collectors.py."""

from __future__ import annotations

import types
from typing import Any

import pynvml

from velyrix.agent.collectors.nvml import NvmlCollector

NS = pynvml.NVML_ERROR_NOT_SUPPORTED


def fake_nvml(lost: set[int], unsupported: set[str], xids: list[tuple[int, int]]) -> Any:
    """A module object with pynvml's names; ``unsupported`` function names raise NotSupported."""
    nv = types.SimpleNamespace(
        **{
            k: getattr(pynvml, k)
            for k in dir(pynvml)
            if k.isupper() or k.startswith(("NVMLError", "nvmlClocks", "nvmlEventType", "nvmlMemory_v2"))
        }
    )
    nv.NVMLError = pynvml.NVMLError
    events = list(xids)

    def call(name: str, fn: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            handle = args[0] if args else None
            if (
                isinstance(handle, int)
                and handle in lost
                and name not in ("nvmlDeviceGetUUID", "nvmlDeviceGetHandleByIndex")
            ):
                raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
            if name in unsupported:
                raise pynvml.NVMLError(NS)
            return fn(*args, **kwargs)

        return wrapped

    answers = {
        pynvml.NVML_FI_DEV_MEMORY_TEMP: 40,
        pynvml.NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL: 42,
        pynvml.NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: 43,
        pynvml.NVML_FI_DEV_NVLINK_LINK_COUNT: 18,
        pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: 1000,
        pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: 2000,
    }
    gpm = {  # NVML GPM metric id -> value (percent, or MiB/s for PCIe)
        pynvml.NVML_GPM_METRIC_GRAPHICS_UTIL: 97.0,
        pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL: 55.0,
        pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL: 40.0,
        pynvml.NVML_GPM_METRIC_PCIE_TX_PER_SEC: 100.0,
        pynvml.NVML_GPM_METRIC_PCIE_RX_PER_SEC: 200.0,
    }

    class GpmRequest:  # the shape of pynvml.c_nvmlGpmMetricsGet_t
        def __init__(self) -> None:
            self.metrics = [types.SimpleNamespace(metricId=0, nvmlReturn=0, value=0.0) for _ in range(8)]

    def gpm_get(request: Any) -> Any:
        assert request.sample1 is not request.sample2
        for m in request.metrics[: request.numMetrics]:
            m.value = gpm[m.metricId]
        return request

    nv.c_nvmlGpmMetricsGet_t = GpmRequest

    def field_values(h: int, ids: list[int]) -> Any:
        values = (pynvml.c_nvmlFieldValue_t * len(ids))()
        for i, fid in enumerate(ids):
            values[i].valueType = 3  # unsigned long long
            if fid in answers:
                values[i].value.ullVal = answers[fid]
            else:
                values[i].nvmlReturn = NS  # e.g. the CRC counter on this part
        return values

    def nvlink_state(h: int, link: int) -> int:
        if link >= 18:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return 0 if link == 5 else 1

    def wait(event_set: Any, timeout_ms: int) -> Any:
        if not events:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT)
        gpu, xid = events.pop(0)
        return types.SimpleNamespace(device=gpu, eventData=xid)

    table = {
        "nvmlInit": lambda: None,
        "nvmlShutdown": lambda: None,
        "nvmlDeviceGetCount": lambda: 2,
        "nvmlDeviceGetHandleByIndex": lambda i: i,
        "nvmlDeviceGetUUID": lambda h: f"GPU-{h}",
        "nvmlDeviceGetName": lambda h: "NVIDIA H200",
        "nvmlDeviceGetSerial": lambda h: f"S{h}",
        "nvmlDeviceGetTemperature": lambda h, s: 51,
        "nvmlDeviceGetPowerUsage": lambda h: 350_000,
        "nvmlDeviceGetTotalEnergyConsumption": lambda h: 123_456,
        "nvmlDeviceGetClockInfo": lambda h, c: 1980,
        "nvmlDeviceGetUtilizationRates": lambda h: types.SimpleNamespace(gpu=97, memory=40),
        "nvmlDeviceGetEncoderUtilization": lambda h: [0, 1000],
        "nvmlDeviceGetDecoderUtilization": lambda h: [0, 1000],
        "nvmlDeviceGetMemoryInfo": lambda h, version=None: types.SimpleNamespace(
            used=1024 * 2**20, free=3072 * 2**20, reserved=512 * 2**20
        ),
        "nvmlDeviceGetTotalEccErrors": lambda h, kind, where: (
            3 if kind == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED else 0
        ),
        "nvmlDeviceGetMemoryErrorCounter": lambda *a: 0,
        "nvmlDeviceGetRemappedRows": lambda h: (1, 2, 0, 1),
        "nvmlDeviceGetRowRemapperHistogram": lambda h: types.SimpleNamespace(
            max=600, high=10, partial=2, low=0, none=0
        ),
        "nvmlDeviceGetRetiredPages": lambda h, c: [],
        "nvmlDeviceGetPcieReplayCounter": lambda h: 7,
        "nvmlDeviceGetCurrentClocksEventReasons": lambda h: 0x40,
        "nvmlDeviceGetFieldValues": field_values,
        "nvmlDeviceGetNvLinkState": nvlink_state,
        "nvmlEventSetCreate": lambda: object(),
        "nvmlDeviceRegisterEvents": lambda h, t, s: None,
        "nvmlEventSetWait_v2": wait,
        "nvmlEventSetFree": lambda s: None,
        "nvmlSystemGetDriverVersion": lambda: "570.133.20",
        "nvmlDeviceGetPciInfo": lambda h: types.SimpleNamespace(busId=f"00000000:{0x18 + h:02X}:00.0".encode()),
        "nvmlGpmQueryDeviceSupport": lambda h: types.SimpleNamespace(isSupportedDevice=1),
        "nvmlGpmSampleAlloc": lambda: object(),
        "nvmlGpmSampleGet": lambda h, sample: sample,
        "nvmlGpmSampleFree": lambda sample: None,
        "nvmlGpmMetricsGet": gpm_get,
    }
    for name, fn in table.items():
        setattr(nv, name, call(name, fn))
    return nv


def test_supported_fields_are_read_with_units_converted() -> None:
    g = NvmlCollector("n1", nvml=fake_nvml(set(), set(), [])).collect().gpus[0]
    assert (g.uuid, g.name, g.temperature_c, g.power_w, g.energy_mj) == ("GPU-0", "NVIDIA H200", 51, 350.0, 123_456)
    assert (g.utilization_pct, g.mem_copy_util_pct, g.fb_used_mib, g.fb_free_mib, g.fb_reserved_mib) == (
        97.0,
        40.0,
        1024.0,
        3072.0,
        512.0,
    )
    assert (g.ecc_sbe_volatile, g.ecc_dbe_aggregate, g.remapped_rows_uncorrectable, g.remap_failure) == (3, 0, 2, True)
    assert g.remap_bank_max == 6  # "partial" banks: between 2 and 6 of 8 used; the upper bound is reported
    assert (g.memory_temperature_c, g.nvlink_crc_errors, g.nvlink_replay_errors) == (40.0, None, 42)
    assert (g.nvlink_links_up, g.pcie_replay, g.throttle_reasons, g.responsive) == (17, 7, 0x40, True)


def test_an_unsupported_field_stays_none_and_is_not_a_problem() -> None:
    collector = NvmlCollector(
        "n1", nvml=fake_nvml(set(), {"nvmlDeviceGetPcieReplayCounter", "nvmlDeviceGetRetiredPages"}, [])
    )
    sample = collector.collect()
    assert all(g.pcie_replay is None and g.retired_pages is None for g in sample.gpus)
    assert all(g.temperature_c == 51 for g in sample.gpus) and sample.problems == []


def test_a_gpu_off_the_bus_is_unresponsive_and_the_others_still_read() -> None:
    sample = NvmlCollector("n1", nvml=fake_nvml({1}, set(), [])).collect()
    assert [g.responsive for g in sample.gpus] == [True, False]
    assert sample.gpus[0].power_w == 350.0 and any("fallen off the bus" in p for p in sample.problems)


def test_xid_events_are_drained_and_counted_per_gpu() -> None:
    collector = NvmlCollector("n1", nvml=fake_nvml(set(), set(), [(1, 79), (1, 79), (0, 13)]))
    sample = collector.collect()
    assert sample.gpus[1].xid_counts == {79: 2} and sample.gpus[0].xid_counts == {13: 1}
    assert collector.collect().gpus[1].xid_counts == {79: 2}  # counts persist across collections


def test_profiling_fields_come_from_gpm_between_two_collections() -> None:
    collector = NvmlCollector("n1", nvml=fake_nvml(set(), set(), []))
    first = collector.collect().gpus[0]
    assert first.gr_engine_active is None  # GPM needs two samples
    assert (first.pci_bus_id, first.driver_version, first.nvlink_bandwidth_kib_total) == (
        "00000000:18:00.0",
        "570.133.20",
        3000,
    )
    g = collector.collect().gpus[0]
    assert (g.gr_engine_active, g.pipe_tensor_active, g.dram_active) == (0.97, 0.55, 0.40)
    assert (g.pcie_tx_bytes_per_s, g.pcie_rx_bytes_per_s) == (100.0 * 2**20, 200.0 * 2**20)


def test_a_gpu_without_gpm_leaves_the_profiling_fields_unset() -> None:
    collector = NvmlCollector("n1", nvml=fake_nvml(set(), {"nvmlGpmQueryDeviceSupport"}, []))
    collector.collect()
    sample = collector.collect()
    assert all(g.gr_engine_active is None and g.pcie_tx_bytes_per_s is None for g in sample.gpus)
    assert sample.problems == []
