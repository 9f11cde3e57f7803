"""GPUs through NVML (nvidia-ml-py), imported lazily so that the agent runs where there is no GPU.

Every field is read on its own: a field the GPU or driver does not support (``NVMLError_NotSupported``,
``NVMLError_FunctionNotFound``...) stays ``None`` rather than failing the reading; a GPU that fell off the
bus (``NVMLError_GpuIsLost``) is reported with ``responsive=False``. XIDs arrive as NVML critical-error
events; the collector drains its event set on each ``collect()`` (never blocking) and counts them.
"""

from __future__ import annotations

import functools
import socket
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

from velyrix import errors
from velyrix.agent.collectors import nvml_prof
from velyrix.agent.collectors.base import Collector, GPUReading, NodeSample

MIB = 1024 * 1024
MAX_XID_EVENTS = 256
"""XID events kept per GPU for reports and health checks (counts are kept in full)."""


def load_nvml() -> Any:
    """Import and initialize pynvml; raise ``NvmlUnavailableError`` when there is no driver/GPU."""
    try:
        import pynvml
    except ImportError as exc:  # pragma: no cover - pinned dependency
        raise errors.NvmlUnavailableError(reason=str(exc), hint="pip install nvidia-ml-py") from exc
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise errors.NvmlUnavailableError(
            reason=str(exc), hint="use --collector sim on machines without NVIDIA GPUs"
        ) from exc
    return pynvml


def _field_value(fv: Any) -> float | None:
    """Decode one ``nvmlFieldValue_t`` (None when the field reported an error)."""
    if fv.nvmlReturn != 0:
        return None
    kind = fv.valueType  # NVML_VALUE_TYPE_DOUBLE=0, UINT=1, ULONG=2, ULONGLONG=3, SLONGLONG=4, SINT=5
    attr = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}.get(kind, "ullVal")
    return float(getattr(fv.value, attr))


class NvmlCollector(Collector):
    """Partial collector: all GPUs visible to NVML on this host."""

    name = "nvml"

    def __init__(self, hostname: str | None = None, nvml: Any = None):
        self.nv = nvml or load_nvml()
        self.hostname = hostname or socket.gethostname()
        self.problems: set[str] = set()
        # recent events per GPU index (bounded: reports carry them) and counts since start (unbounded codes
        # are few: the XID catalog has a few dozen)
        self._xids: dict[int, deque[tuple[float, int]]] = {}
        self._xid_counts: dict[int, Counter[int]] = {}
        self._events: Any = None
        self._gpm = nvml_prof.GpmReader(self.nv)
        self._driver = nvml_prof.driver_version(self.nv)
        try:
            self._events = self.nv.nvmlEventSetCreate()
            for i in range(self.nv.nvmlDeviceGetCount()):
                handle = self.nv.nvmlDeviceGetHandleByIndex(i)
                try:
                    self.nv.nvmlDeviceRegisterEvents(handle, self.nv.nvmlEventTypeXidCriticalError, self._events)
                except self.nv.NVMLError as exc:
                    self.problems.add(f"gpu {i}: XID events: {exc}")
        except self.nv.NVMLError as exc:
            self.problems.add(f"XID event set: {exc}")
            self._events = None

    def _try(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except self.nv.NVMLError_GpuIsLost:
            raise
        except self.nv.NVMLError as exc:
            if not isinstance(exc, self.nv.NVMLError_NotSupported):
                self.problems.add(f"{what}: {exc}")
            return None

    def _drain_xids(self, uuid_to_index: dict[str, int]) -> None:
        if self._events is None:
            return
        while True:
            try:
                data = self.nv.nvmlEventSetWait_v2(self._events, 0)
            except self.nv.NVMLError_Timeout:
                return
            except self.nv.NVMLError as exc:
                self.problems.add(f"XID events: {exc}")
                return
            uuid = self._try("event uuid", functools.partial(self.nv.nvmlDeviceGetUUID, data.device))
            index = uuid_to_index.get(uuid, -1) if uuid else -1
            xid = int(data.eventData)
            self._xids.setdefault(index, deque(maxlen=MAX_XID_EVENTS)).append((time.time(), xid))
            self._xid_counts.setdefault(index, Counter())[xid] += 1

    def read_gpu(self, i: int) -> GPUReading:
        """One GPU's reading; every field independent of the others."""
        nv = self.nv
        try:
            h = nv.nvmlDeviceGetHandleByIndex(i)
            uuid = nv.nvmlDeviceGetUUID(h)
        except nv.NVMLError as exc:
            lost = " (fallen off the bus)" if isinstance(exc, nv.NVMLError_GpuIsLost) else ""
            self.problems.add(f"gpu {i}: {exc}{lost}")
            lost_gpu = GPUReading.unread(i, f"GPU-unreadable-{i}")
            lost_gpu.responsive = False
            return lost_gpu
        t = lambda what, fn: self._try(f"gpu {i} {what}", fn)
        g = GPUReading.unread(i, uuid)
        try:
            g.name = t("name", lambda: nv.nvmlDeviceGetName(h)) or "unknown"
            g.serial = t("serial", lambda: nv.nvmlDeviceGetSerial(h))
            g.temperature_c = t("temperature", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
            power_mw = t("power", lambda: nv.nvmlDeviceGetPowerUsage(h))
            g.power_w = power_mw / 1000.0 if power_mw is not None else None
            g.energy_mj = t("energy", lambda: nv.nvmlDeviceGetTotalEnergyConsumption(h))
            g.sm_clock_mhz = t("sm clock", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
            g.mem_clock_mhz = t("mem clock", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))
            util = t("utilization", lambda: nv.nvmlDeviceGetUtilizationRates(h))
            if util is not None:
                g.utilization_pct, g.mem_copy_util_pct = float(util.gpu), float(util.memory)
            enc = t("encoder", lambda: nv.nvmlDeviceGetEncoderUtilization(h))
            dec = t("decoder", lambda: nv.nvmlDeviceGetDecoderUtilization(h))
            g.enc_util_pct = float(enc[0]) if enc else None
            g.dec_util_pct = float(dec[0]) if dec else None
            mem = t("memory v2", lambda: nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2))
            mem = mem or t("memory", lambda: nv.nvmlDeviceGetMemoryInfo(h))
            if mem is not None:
                g.fb_used_mib, g.fb_free_mib = mem.used / MIB, mem.free / MIB
                g.fb_reserved_mib = getattr(mem, "reserved", 0) / MIB if hasattr(mem, "reserved") else None
            ecc = lambda kind, where: t("ecc", lambda: nv.nvmlDeviceGetTotalEccErrors(h, kind, where))
            g.ecc_sbe_volatile = ecc(nv.NVML_MEMORY_ERROR_TYPE_CORRECTED, nv.NVML_VOLATILE_ECC)
            g.ecc_dbe_volatile = ecc(nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC)
            g.ecc_sbe_aggregate = ecc(nv.NVML_MEMORY_ERROR_TYPE_CORRECTED, nv.NVML_AGGREGATE_ECC)
            g.ecc_dbe_aggregate = ecc(nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_AGGREGATE_ECC)
            g.sram_uncorrectable = t(
                "sram ecc",
                lambda: nv.nvmlDeviceGetMemoryErrorCounter(
                    h, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_AGGREGATE_ECC, nv.NVML_MEMORY_LOCATION_SRAM
                ),
            )
            remap = t("row remap", lambda: nv.nvmlDeviceGetRemappedRows(h))
            if remap is not None:
                corr, unc, pending, failed = remap
                g.remapped_rows_correctable, g.remapped_rows_uncorrectable = int(corr), int(unc)
                g.remap_pending, g.remap_failure = bool(pending), bool(failed)
            hist = t("remap histogram", lambda: nv.nvmlDeviceGetRowRemapperHistogram(h))
            if hist is not None:
                # The histogram counts banks by remap slots still available (8 per bank); report an upper
                # bound of the slots used in the worst bank ("partial" covers 2-6 used).
                g.remap_bank_max = 8 if hist.none else 7 if hist.low else 6 if hist.partial else 1 if hist.high else 0
            pages = [
                t("retired pages", lambda c=c: nv.nvmlDeviceGetRetiredPages(h, c))
                for c in (
                    nv.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
                    nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                )
            ]
            g.retired_pages = sum(len(p) for p in pages) if any(p is not None for p in pages) else None
            g.pcie_replay = t("pcie replay", lambda: nv.nvmlDeviceGetPcieReplayCounter(h))
            g.throttle_reasons = t("clock events", lambda: nv.nvmlDeviceGetCurrentClocksEventReasons(h))
            fields = t(
                "field values",
                lambda: nv.nvmlDeviceGetFieldValues(
                    h,
                    [
                        nv.NVML_FI_DEV_MEMORY_TEMP,
                        nv.NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
                        nv.NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL,
                        nv.NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL,
                        nv.NVML_FI_DEV_NVLINK_LINK_COUNT,
                    ],
                ),
            )
            vals = [_field_value(f) for f in fields] if fields is not None else [None] * 5
            g.memory_temperature_c = vals[0]
            g.nvlink_crc_errors, g.nvlink_replay_errors, g.nvlink_recovery_errors = (
                int(v) if v is not None else None for v in vals[1:4]
            )
            g.nvlink_links_up = self._links_up(h, int(vals[4]) if vals[4] is not None else nv.NVML_NVLINK_MAX_LINKS)
            nvml_prof.read_identity(nv, h, g, self._driver)
            self._gpm.read(i, h, g, self.problems)
        except nv.NVMLError_GpuIsLost:
            g.responsive = False
            self.problems.add(f"gpu {i}: fallen off the bus")
        return g

    def _links_up(self, h: Any, links: int) -> int | None:
        """Active NVLinks among the first ``links``; None when the GPU has no NVLink (or NVML cannot say).
        A link index the part does not have answers InvalidArgument/NotSupported: not a problem."""
        nv = self.nv
        up = None
        for link in range(links):
            try:
                state = nv.nvmlDeviceGetNvLinkState(h, link)
            except (nv.NVMLError_NotSupported, nv.NVMLError_InvalidArgument):
                continue
            except nv.NVMLError_GpuIsLost:
                raise
            except nv.NVMLError as exc:
                self.problems.add(f"nvlink {link}: {exc}")
                continue
            up = (up or 0) + (1 if state else 0)
        return up

    def collect(self) -> NodeSample:
        self.problems.clear()
        try:
            count = self.nv.nvmlDeviceGetCount()
        except self.nv.NVMLError as exc:
            return NodeSample(hostname=self.hostname, up=True, problems=[f"nvml: {exc}"])
        gpus = [self.read_gpu(i) for i in range(count)]
        self._drain_xids({g.uuid: g.index for g in gpus})
        for g in gpus:
            g.xid_events = list(self._xids.get(g.index, ()))
            g.xid_counts = dict(self._xid_counts.get(g.index, {}))
        return NodeSample(hostname=self.hostname, gpus=gpus, problems=sorted(self.problems))

    def close(self) -> None:
        try:
            if self._events is not None:
                self.nv.nvmlEventSetFree(self._events)
            self.nv.nvmlShutdown()
        except self.nv.NVMLError:
            pass
