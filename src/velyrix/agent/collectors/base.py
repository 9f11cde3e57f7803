"""What a collector returns, and the two seams the rest of Velyrix builds on.

``Collector.collect()`` returns a ``NodeSample``: one reading of a node's GPUs (field names are those of
the twin's ``SimGPU``, which are NVML's quantities with units in the names), its InfiniBand ports (sysfs
counter names) and its local NVMe drives. Health checks read ``NodeSample``s; active tests (a GEMM, a
memory test) go through a ``Prober``, which the twin implements and a real node implements with kernels.

Collectors are looked up by name (``create("nvml")``); the registry holds import paths so that an
optional SDK (nvidia-ml-py) is imported only when its collector is used.
"""

from __future__ import annotations

import abc
import importlib
import socket
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from velyrix import errors
from velyrix.catalog.gpu_counters import COUNTER_NAMES, GpuCounters


@dataclass
class GPUReading(GpuCounters[None]):
    """One GPU at one instant. ``None`` means the device did not report the field (not supported). The
    health counters come from ``catalog.gpu_counters.GpuCounters``: built directly, a reading holds its
    healthy defaults; collectors start from ``unread`` (every counter None) and fill in what they read.

    Counters (``ecc_*``, ``remapped_rows_*``, ``nvlink_*_errors``, ``pcie_replay``, ``energy_mj``) are
    cumulative; ``*_volatile`` counts reset at driver reload, ``*_aggregate`` persist on the board.
    ``xid_counts`` maps an XID code to the number of times it occurred since the collector started
    (or, for the twin, since the node booted); ``xid_events`` holds the (time_s, xid) events behind it.
    """

    index: int
    uuid: str
    name: str = "unknown"
    serial: str | None = None
    temperature_c: float | None = None
    memory_temperature_c: float | None = None
    power_w: float | None = None
    energy_mj: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    utilization_pct: float | None = None
    mem_copy_util_pct: float | None = None
    enc_util_pct: float | None = None
    dec_util_pct: float | None = None
    fb_used_mib: float | None = None
    fb_free_mib: float | None = None
    fb_reserved_mib: float | None = None
    xid_events: list[tuple[float, int]] = field(default_factory=list)
    xid_counts: dict[int, int] = field(default_factory=dict)
    bf16_tflops_measured: float | None = None
    hbm_gb_s_measured: float | None = None
    responsive: bool = True
    # dcgm-exporter's default counters (agent/dcgm_fields.py): identity labels and profiling fields
    pci_bus_id: str | None = None
    driver_version: str | None = None
    gr_engine_active: float | None = None
    """Ratio (0-1) of time the graphics/compute engine was active (DCGM_FI_PROF_GR_ENGINE_ACTIVE)."""
    pipe_tensor_active: float | None = None
    """Ratio (0-1) of cycles a tensor pipe was active (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)."""
    dram_active: float | None = None
    """Ratio (0-1) of cycles the device memory interface was busy (DCGM_FI_PROF_DRAM_ACTIVE)."""
    pcie_tx_bytes_per_s: float | None = None
    pcie_rx_bytes_per_s: float | None = None
    nvlink_bandwidth_kib_total: int | None = None
    """Cumulative NVLink data moved, TX + RX over all links, KiB (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL)."""
    vgpu_license_status: int | None = None

    @classmethod
    def unread(cls, index: int, uuid: str) -> GPUReading:
        """A reading of GPU ``index`` before any counter was read: every health counter None."""
        reading = cls(index=index, uuid=uuid)
        for name in COUNTER_NAMES:
            setattr(reading, name, None)
        return reading

    @property
    def last_xid(self) -> int:
        """The most recent XID (0 when none): what dcgm-exporter's ``DCGM_FI_DEV_XID_ERRORS`` shows."""
        return self.xid_events[-1][1] if self.xid_events else 0


@dataclass
class IBPortReading:
    """One InfiniBand port: ``counters`` keeps sysfs names and units (``port_*_data`` in 4-byte words)."""

    device: str
    port: int
    state: str = "UNKNOWN"
    rate_gbps: float | None = None
    counters: dict[str, int] = field(default_factory=dict)


@dataclass
class NVMeReading:
    """One NVMe controller: SMART health plus cumulative bytes moved (from the block layer)."""

    name: str
    model: str | None = None
    media_errors: int | None = None
    percent_used: float | None = None
    read_bytes: int | None = None
    written_bytes: int | None = None
    read_gb_s_measured: float | None = None
    write_gb_s_measured: float | None = None


@dataclass
class NodeSample:
    """Everything one collection saw on a node. ``collected_at_s`` is wall-clock Unix time (s).

    ``up`` is False when the node could not be read at all (powered off, BMC only); ``problems`` lists
    what a collector could not read, for the agent's log and the control plane (not for alerts).
    """

    hostname: str
    node_type: str | None = None
    serial: str | None = None
    collected_at_s: float = field(default_factory=time.time)
    up: bool = True
    gpus: list[GPUReading] = field(default_factory=list)
    ib_ports: list[IBPortReading] = field(default_factory=list)
    nvme: list[NVMeReading] = field(default_factory=list)
    firmware: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    booted_at_s: float | None = None
    """When the node booted (same clock as ``collected_at_s``; None when unknown): a change means it rebooted."""
    health_level: int | None = None
    """Health engine verdict (``velyrix.health.ladder.Level``: 0 ok .. 3 fatal), set by the agent's checks."""
    health_action: int | None = None
    """Rung of ``velyrix.health.ladder.Action`` the verdict asks for (0 ignore .. 7 RMA)."""
    health_summary: str = ""
    jobs: list[dict[str, Any]] = field(default_factory=list)
    """The jobs on the node's GPUs when it was read (``velyrix.agent.jobs.JobMap.report``: ``hpc_job``,
    ``gpus``, attribution), the job mapping the exporter labels its series with; empty when idle."""
    health_verdict: dict[str, Any] | None = None
    """The whole verdict (``velyrix.health.engine.Verdict.to_dict()``: level, action, every reason), set
    with ``health_level``; the reporter sends it beside the sample, typed, never as a summary string."""

    def to_dict(self) -> dict[str, Any]:
        """The sample as JSON-able data (what the reporter sends to the control plane, less the verdict)."""
        out = asdict(self)
        out.pop("health_verdict")
        for gpu in out["gpus"]:
            gpu["xid_counts"] = {str(k): v for k, v in gpu["xid_counts"].items()}
            gpu["xid_events"] = [list(e) for e in gpu["xid_events"]]
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> NodeSample:
        """The inverse of ``to_dict`` (the twin's telemetry endpoint sends this form). Unknown keys are
        ignored, so a newer server does not break an older agent."""
        known = {f for f in cls.__dataclass_fields__ if f not in ("gpus", "ib_ports", "nvme", "health_verdict")}
        out = cls(**{k: v for k, v in raw.items() if k in known})
        gpu_fields = set(GPUReading.__dataclass_fields__)
        for g in raw.get("gpus") or []:
            kw = {**dict.fromkeys(COUNTER_NAMES), **{k: v for k, v in g.items() if k in gpu_fields}}
            kw["xid_events"] = [(float(t), int(x)) for t, x in kw.get("xid_events") or []]
            kw["xid_counts"] = {int(k): int(v) for k, v in (kw.get("xid_counts") or {}).items()}
            out.gpus.append(GPUReading(**kw))
        port_fields = set(IBPortReading.__dataclass_fields__)
        out.ib_ports = [
            IBPortReading(**{k: v for k, v in p.items() if k in port_fields}) for p in raw.get("ib_ports") or []
        ]
        nvme_fields = set(NVMeReading.__dataclass_fields__)
        out.nvme = [NVMeReading(**{k: v for k, v in d.items() if k in nvme_fields}) for d in raw.get("nvme") or []]
        return out


def read_sysfs(path: Path) -> str | None:
    """The stripped text of a sysfs attribute file, or None when it cannot be read (absent, no permission)."""
    try:
        return path.read_text().strip()
    except OSError:
        return None


def xid_counts(events: list[tuple[float, int]]) -> dict[int, int]:
    """Count ``(time_s, xid)`` events per XID code."""
    return dict(Counter(xid for _, xid in events))


def merge(hostname: str, parts: list[NodeSample]) -> NodeSample:
    """Combine the samples of partial collectors (GPUs from one, IB from another...) into one."""
    out = NodeSample(hostname=hostname)
    for part in parts:
        out.node_type = out.node_type or part.node_type
        out.serial = out.serial or part.serial
        out.gpus.extend(part.gpus)
        out.ib_ports.extend(part.ib_ports)
        out.nvme.extend(part.nvme)
        out.firmware.update(part.firmware)
        out.problems.extend(part.problems)
        out.up = out.up and part.up
    return out


class Collector(abc.ABC):
    """Reads a node's hardware. Contract:

    - ``collect()`` is cheap enough to call on every scrape (well under a second), never blocks on a
      device for long, and returns a fresh ``NodeSample``; a field a device does not support is ``None``
      and is not an error; a device that vanished is reported in ``problems`` (and ``responsive=False``
      for a GPU), not raised.
    - ``close()`` releases handles; calling ``collect()`` afterwards is not allowed.
    """

    name: str = "base"
    twin_clock: bool = False
    """True when ``collected_at_s`` and the counters are on a digital twin's simulated clock (the exporter
    then shows the flow counters on the wall clock: ``velyrix.agent.wall_rates``)."""

    @abc.abstractmethod
    def collect(self) -> NodeSample:
        """One reading of the node."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release device handles (default: nothing to release)."""


PROBE_KINDS = ("gemm", "mem")


class ProbeSkipped(Exception):
    """Raised by a prober the operator turned off (``--prober none``): the check is recorded as
    ``skipped`` (level warn, no action), neither a pass nor a failure."""


@dataclass(frozen=True)
class ProbeResult:
    """One active test on one GPU.

    ``value``: the measured figure (TFLOPS for ``gemm``, GB/s for ``mem``) or None when the test reports
    none; ``passed``: the prober's own verdict (DCGM's pass/fail) or None when only ``value`` judges;
    ``vs_spec``: whether ``value`` is comparable to the catalog's BF16 TFLOPS / HBM GB/s (a DCGM figure is
    not: other precision and method, so only the peer comparison applies); ``detail``: what ran.
    """

    value: float | None
    passed: bool | None = None
    vs_spec: bool = True
    detail: str = ""


class Prober(abc.ABC):
    """Active tests on an idle GPU (they disturb a running job, so the health checks call them only
    between jobs). Implemented by the twin (``SimProber``) and, on real nodes, by NVIDIA DCGM's
    diagnostics (``velyrix.agent.collectors.dcgm.DcgmProber``); ``NoProber`` is the operator's
    explicit choice to skip them."""

    @abc.abstractmethod
    def run_gemm(self, gpu: int, duration_s: float = 10.0) -> float:
        """Run a BF16 GEMM on GPU ``gpu`` for ``duration_s``; return the measured TFLOPS."""

    @abc.abstractmethod
    def run_memtest(self, gpu: int, duration_s: float = 10.0) -> float:
        """Stream through GPU ``gpu``'s HBM for ``duration_s``; return the measured bandwidth in GB/s."""

    def probe(self, kind: str, gpu: int, duration_s: float) -> ProbeResult:
        """Run the ``kind`` test (``gemm`` or ``mem``) on ``gpu``; the default wraps ``run_gemm`` /
        ``run_memtest`` (a figure comparable to the catalog spec, judged by the check)."""
        fn = self.run_gemm if kind == "gemm" else self.run_memtest
        return ProbeResult(float(fn(gpu, duration_s)))


class NoProber(Prober):
    """``--prober none``: active tests are skipped by configuration (``ProbeSkipped``), never passed."""

    REASON = "skipped by configuration (--prober none)"

    def run_gemm(self, gpu: int, duration_s: float = 10.0) -> float:
        raise ProbeSkipped(self.REASON)

    def run_memtest(self, gpu: int, duration_s: float = 10.0) -> float:
        raise ProbeSkipped(self.REASON)


class HostCollector(Collector):
    """A real node: several partial collectors (NVML, InfiniBand, NVMe) merged into one sample."""

    name = "host"

    def __init__(self, parts: list[Collector], hostname: str | None = None, node_type: str | None = None):
        self.parts = parts
        self.hostname = hostname or socket.gethostname()
        self.node_type = node_type

    def collect(self) -> NodeSample:
        samples = []
        for part in self.parts:
            try:
                samples.append(part.collect())
            except errors.VelyrixError as exc:
                samples.append(NodeSample(hostname=self.hostname, problems=[f"{part.name}: {exc.message}"]))
        out = merge(self.hostname, samples)
        out.node_type = self.node_type or out.node_type
        return out

    def close(self) -> None:
        for part in self.parts:
            part.close()


# name -> "module:Class"; imported on use so that nvidia-ml-py loads only for the nvml collector.
_REGISTRY: dict[str, str] = {
    "nvml": "velyrix.agent.collectors.nvml:NvmlCollector",
    "infiniband": "velyrix.agent.collectors.infiniband:InfinibandCollector",
    "nvme": "velyrix.agent.collectors.nvme:NvmeCollector",
    "sim": "velyrix.agent.collectors.sim:SimCollector",
    "twin": "velyrix.agent.collectors.twin:TwinCollector",
}


def names() -> list[str]:
    """Names of the registered collectors."""
    return sorted(_REGISTRY)


def create(name: str, **kwargs: Any) -> Collector:
    """Instantiate the collector registered as ``name`` with ``kwargs``.

    Raises ``UnknownNameError`` (with the closest name) for a name that is not registered.
    """
    if name not in _REGISTRY:
        raise errors.UnknownNameError("collector", name, _REGISTRY)
    module_name, cls_name = _REGISTRY[name].split(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    collector: Collector = cls(**kwargs)
    return collector
