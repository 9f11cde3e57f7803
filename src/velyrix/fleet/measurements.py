"""What the per-node delivery tests measure, as typed records (``Driver.run_acceptance``'s ``result``).

A driver reports JSON (``to_dict`` gives it back, with ``schema_version``); ``NodeMeasurements.from_dict``
parses it once, at the edge, and ``velyrix.fleet.acceptance.judge_node`` judges the records. Units are in the
field names: TFLOPS, GB/s (bytes), Gb/s (bits).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class GpuMeasurement:
    """One GPU: GEMM and HBM speed, NVLink, and the error state that fails it whatever its speed."""

    index: int
    responsive: bool
    bf16_tflops: float
    hbm_gb_s: float
    nvlink_links_up: int
    nvlink_links_total: int
    nvlink_gb_s: float
    ecc_dbe_volatile: int
    remap_failure: bool
    remap_pending: bool = False
    uuid: str = ""
    serial: str = ""
    throttle_reasons: int = 0

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> GpuMeasurement:
        return cls(
            index=int(raw["index"]),
            responsive=bool(raw["responsive"]),
            bf16_tflops=raw["bf16_tflops"],
            hbm_gb_s=raw["hbm_gb_s"],
            nvlink_links_up=raw["nvlink_links_up"],
            nvlink_links_total=raw["nvlink_links_total"],
            nvlink_gb_s=raw["nvlink_gb_s"],
            ecc_dbe_volatile=raw["ecc_dbe_volatile"],
            remap_failure=bool(raw["remap_failure"]),
            remap_pending=bool(raw.get("remap_pending", False)),
            uuid=str(raw.get("uuid", "")),
            serial=str(raw.get("serial", "")),
            throttle_reasons=int(raw.get("throttle_reasons", 0)),
        )

    def problems(self) -> list[str]:
        """Why this GPU fails burn-in whatever it measures (empty when none)."""
        found = []
        if not self.responsive:
            found.append("not responding (fallen off the bus)")
        if self.ecc_dbe_volatile:
            found.append(f"{self.ecc_dbe_volatile} uncorrectable ECC errors")
        if self.remap_failure:
            found.append("row remap failure")
        if self.remap_pending:
            found.append("row remap pending (needs a reset)")
        return found


@dataclass(frozen=True)
class IbPortMeasurement:
    """One compute port of an RDMA NIC: its state, rate (Gb/s; 0 when not ACTIVE) and link layer
    (``InfiniBand``, or ``Ethernet`` for RoCE; sysfs ``ports/N/link_layer``)."""

    device: str
    state: str
    rate_gbps: float
    port: int = 1
    link_layer: str = "InfiniBand"

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> IbPortMeasurement:
        return cls(
            device=raw["device"],
            state=raw["state"],
            rate_gbps=raw["rate_gbps"],
            port=raw.get("port", 1),
            link_layer=raw.get("link_layer", "InfiniBand"),
        )


@dataclass(frozen=True)
class NvmeMeasurement:
    """The node's local NVMe drives together: aggregate read and write (GB/s)."""

    read_gb_s: float = 0.0
    write_gb_s: float = 0.0
    drives: int = 0
    media_errors: int = 0

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> NvmeMeasurement:
        return cls(
            read_gb_s=raw.get("read_gb_s", 0.0),
            write_gb_s=raw.get("write_gb_s", 0.0),
            drives=int(raw.get("drives", 0)),
            media_errors=int(raw.get("media_errors", 0)),
        )


@dataclass(frozen=True)
class NodeMeasurements:
    """Everything the per-node tests measured on one node."""

    node: str
    gpus: tuple[GpuMeasurement, ...] = ()
    ib_ports: tuple[IbPortMeasurement, ...] = ()
    nvme: NvmeMeasurement = NvmeMeasurement()

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> NodeMeasurements:
        """Parse a driver's result (``KeyError`` names a missing per-device field)."""
        return cls(
            node=str(raw.get("node", "")),
            gpus=tuple(GpuMeasurement.from_dict(g) for g in raw.get("gpus", [])),
            ib_ports=tuple(IbPortMeasurement.from_dict(p) for p in raw.get("ib_ports", [])),
            nvme=NvmeMeasurement.from_dict(raw.get("nvme", {})),
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["schema_version"] = SCHEMA_VERSION
        return out
