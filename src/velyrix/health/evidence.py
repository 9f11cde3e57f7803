"""Evidence the engine reads: XID events, counter samples, check results and repair history.

Plain frozen records with the NVML/sysfs field names of the twin's SimGPU/SimIBPort/SimNVMe
(fleet/drivers/sim/devices.py),
so that the agent's NodeSample and the twin convert into them field by field. Times are seconds on one
clock (wall or simulated), named ``t_s``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Never

from velyrix.catalog.gpu_counters import GpuCounters

CHECK_STATUSES = ("pass", "fail", "error", "timeout", "skipped")
"""``error`` and ``timeout`` mean the check could not run: they count as failures, never as passes. ``skipped``:
an active test the operator turned off (``--prober none``), level warn: neither a pass nor a drain."""

REPAIR_KINDS = ("reset_gpu", "reboot", "drain", "undrain", "quarantine", "rma", "part_swap")
FIX_RUNG = {"reset_gpu": 2, "reboot": 3, "part_swap": 7}
"""Repairs that fix something, with the ladder rung they stand for (drain/quarantine/rma fix nothing)."""


@dataclass(frozen=True)
class XidEvent:
    """An XID reported by the driver for one GPU (``gpu`` None when the index is unknown).

    ``recovery_action`` is NVML's recovery action name for XID 154 (NONE, GPU_RESET, NODE_REBOOT,
    DRAIN_P2P, DRAIN_AND_RESET)."""

    t_s: float
    code: int
    gpu: int | None = None
    recovery_action: str | None = None


@dataclass(unsafe_hash=True)
class GpuReading(GpuCounters[Never]):
    """One GPU's counters at one instant (NVML names; cumulative counters only grow until a reset). The health
    counters come from ``catalog.gpu_counters.GpuCounters``. Immutable once built, like the other records
    here (a dataclass cannot be ``frozen`` on the twin's mutable base, so ``__setattr__`` refuses instead).
    """

    index: int
    temperature_c: float = 0.0
    memory_temperature_c: float = 0.0
    bf16_tflops_measured: float | None = None
    hbm_gb_s_measured: float | None = None
    responsive: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "_sealed", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_sealed", False):
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    @property
    def remapped_rows_total(self) -> int:
        return self.remapped_rows_correctable + self.remapped_rows_uncorrectable

    @classmethod
    def from_object(cls, obj: Any, index: int | None = None) -> GpuReading:
        """Copy the fields this record knows from ``obj`` (a SimGPU, an agent GPU reading, a dict)."""
        get = (lambda k: obj.get(k)) if isinstance(obj, Mapping) else (lambda k: getattr(obj, k, None))
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            value = get(f.name)
            if value is None:
                continue
            kwargs[f.name] = bool(value) if f.name in ("responsive",) else value
        if index is not None:
            kwargs["index"] = index
        for flag in ("remap_pending", "remap_failure"):
            if flag in kwargs:
                kwargs[flag] = bool(kwargs[flag])
        return cls(**kwargs)


@dataclass(frozen=True)
class IbPortReading:
    """One InfiniBand port: state (``ACTIVE``, ``DOWN``...) and its sysfs counters."""

    device: str
    port: int = 1
    state: str = "ACTIVE"
    rate_gbps: float = 0.0
    counters: Mapping[str, int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.device}/{self.port}"


@dataclass(frozen=True)
class NvmeReading:
    """One local NVMe drive's SMART view."""

    name: str
    media_errors: int = 0
    percent_used: int = 0
    read_gb_s_measured: float | None = None
    write_gb_s_measured: float | None = None


@dataclass(frozen=True)
class CounterSample:
    """Everything read from one node at one instant."""

    t_s: float
    gpus: tuple[GpuReading, ...] = ()
    ib_ports: tuple[IbPortReading, ...] = ()
    nvme: tuple[NvmeReading, ...] = ()

    @classmethod
    def from_reading(
        cls, t_s: float, gpus: Iterable[Any], ib_ports: Iterable[Any], nvme: Iterable[Any]
    ) -> CounterSample:
        """The engine's view of one collection at ``t_s``: ``gpus``/``ib_ports``/``nvme`` are the agent's
        readings or their JSON form (a node report's ``sample``). Fields a device did not report keep the
        healthy defaults; checks that need them treat a missing value as "could not run"."""
        get = _getter
        return cls(
            t_s=t_s,
            gpus=tuple(GpuReading.from_object(g) for g in gpus),
            ib_ports=tuple(
                IbPortReading(
                    str(get(p, "device")),
                    int(get(p, "port") or 1),
                    str(get(p, "state") or "UNKNOWN"),
                    float(get(p, "rate_gbps") or 0.0),
                    {str(k): int(v) for k, v in dict(get(p, "counters") or {}).items()},
                )
                for p in ib_ports
            ),
            nvme=tuple(
                NvmeReading(
                    str(get(d, "name")),
                    int(get(d, "media_errors") or 0),
                    int(get(d, "percent_used") or 0),
                    get(d, "read_gb_s_measured"),
                    get(d, "write_gb_s_measured"),
                )
                for d in nvme
            ),
        )


def _getter(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def xid_events_of(gpus: Iterable[Any], since_s: float = float("-inf")) -> list[XidEvent]:
    """The XID events of ``gpus`` (readings or their JSON form, each with ``index`` and ``xid_events`` as
    ``(t_s, code)`` pairs) at or after ``since_s``."""
    out = []
    for g in gpus:
        index = _getter(g, "index")
        for t, code in _getter(g, "xid_events") or ():
            if float(t) >= since_s:
                out.append(XidEvent(float(t), int(code), int(index) if index is not None else None))
    return out


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one health check. ``action``/``level`` apply when it did not pass."""

    name: str
    status: str
    t_s: float
    action: str = "DRAIN_AFTER_JOB"
    level: str = "degraded"
    detail: str = ""
    gpu: int | None = None
    duration_s: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def ran(self) -> bool:
        return self.status in ("pass", "fail")


@dataclass(frozen=True)
class RepairEvent:
    """Something done to the node: ``kind`` in REPAIR_KINDS; ``gpu`` None for the whole node."""

    t_s: float
    kind: str
    gpu: int | None = None
    reason: str = ""


@dataclass(frozen=True)
class Evidence:
    """All evidence about one node at time ``now_s``.

    ``peers`` maps a per-GPU metric (``bf16_tflops_measured``, ``hbm_gb_s_measured``) to the values
    measured on peer GPUs of the same type; without peers the node's own GPUs are compared."""

    node: str
    now_s: float
    xids: tuple[XidEvent, ...] = ()
    samples: tuple[CounterSample, ...] = ()
    checks: tuple[CheckResult, ...] = ()
    repairs: tuple[RepairEvent, ...] = ()
    peers: Mapping[str, Sequence[float]] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        node: str,
        now_s: float,
        *,
        xids: Iterable[XidEvent] = (),
        samples: Iterable[CounterSample] = (),
        checks: Iterable[CheckResult] = (),
        repairs: Iterable[RepairEvent] = (),
        peers: Mapping[str, Sequence[float]] | None = None,
    ) -> Evidence:
        """Evidence with every stream sorted by time."""
        return cls(
            node=node,
            now_s=now_s,
            xids=tuple(sorted(xids, key=lambda e: e.t_s)),
            samples=tuple(sorted(samples, key=lambda s: s.t_s)),
            checks=tuple(sorted(checks, key=lambda c: c.t_s)),
            repairs=tuple(sorted(repairs, key=lambda r: r.t_s)),
            peers=dict(peers or {}),
        )
