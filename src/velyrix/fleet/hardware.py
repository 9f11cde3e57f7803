"""What a node is made of and where it sits: the fleet's hardware model.

``NodeHardware`` is what inspection returns and what the control plane stores as the node's
``hardware`` JSON (``to_dict``/``from_dict`` round-trip). ``position()`` places a node in its rack,
scalable unit (SU) and rail leaves (see ``velyrix.fleet.topology``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GPUInfo:
    """One GPU as inventoried: NVML index, UUID (``GPU-...``), board serial, model, memory (GB)."""

    index: int
    uuid: str
    serial: str
    model: str
    memory_gb: float


@dataclass(frozen=True)
class NICInfo:
    """One network port. ``role`` is ``compute`` (one per GPU, on rail ``rail``), ``storage`` or ``inband``."""

    device: str
    role: str
    speed_gbps: int
    mac: str
    rail: int | None = None
    firmware: str = ""


@dataclass(frozen=True)
class BMCInfo:
    """The baseboard management controller on the out-of-band network."""

    address: str
    mac: str
    firmware: str


@dataclass(frozen=True)
class NVMeInfo:
    """One local NVMe drive."""

    name: str
    serial: str
    capacity_tb: float


@dataclass(frozen=True)
class LeafPort:
    """Where one compute NIC is cabled: rail-leaf switch name and its downlink port (1-based)."""

    rail: int
    leaf: str
    port: int


@dataclass(frozen=True)
class Position:
    """Physical place of a node: region, scalable unit, rack, slot in the SU, compute-fabric ports."""

    region: str
    su: int
    rack: str
    slot: int
    leaf_ports: tuple[LeafPort, ...] = ()
    su_nodes: int = 32
    """Nodes per scalable unit of the fabric this node is cabled into."""


@dataclass(frozen=True)
class NodeHardware:
    """A node's inventory as inspection reports it."""

    hostname: str
    node_type: str
    serial: str
    gpus: tuple[GPUInfo, ...]
    nics: tuple[NICInfo, ...]
    bmc: BMCInfo
    nvme: tuple[NVMeInfo, ...]
    firmware: dict[str, str] = field(default_factory=dict)
    position: Position | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (the ``hardware`` column): what ``dataclasses.asdict`` gives, built field by
        field (``asdict`` deep-copies every leaf: a third of a twin node's intake CPU at 4,096 nodes)."""
        pos = self.position
        return {
            "hostname": self.hostname,
            "node_type": self.node_type,
            "serial": self.serial,
            "gpus": tuple(dict(g.__dict__) for g in self.gpus),
            "nics": tuple(dict(n.__dict__) for n in self.nics),
            "bmc": dict(self.bmc.__dict__),
            "nvme": tuple(dict(d.__dict__) for d in self.nvme),
            "firmware": dict(self.firmware),
            "position": None
            if pos is None
            else {
                "region": pos.region,
                "su": pos.su,
                "rack": pos.rack,
                "slot": pos.slot,
                "leaf_ports": tuple(dict(lp.__dict__) for lp in pos.leaf_ports),
                "su_nodes": pos.su_nodes,
            },
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> NodeHardware:
        """Inverse of ``to_dict``."""
        pos = raw.get("position")
        position = None
        if pos:
            position = Position(
                region=pos["region"],
                su=pos["su"],
                rack=pos["rack"],
                slot=pos["slot"],
                leaf_ports=tuple(LeafPort(**lp) for lp in pos.get("leaf_ports", ())),
                su_nodes=int(pos.get("su_nodes", 32)),
            )
        return cls(
            hostname=raw["hostname"],
            node_type=raw["node_type"],
            serial=raw["serial"],
            gpus=tuple(GPUInfo(**g) for g in raw["gpus"]),
            nics=tuple(NICInfo(**n) for n in raw["nics"]),
            bmc=BMCInfo(**raw["bmc"]),
            nvme=tuple(NVMeInfo(**d) for d in raw["nvme"]),
            firmware=dict(raw.get("firmware", {})),
            position=position,
        )

    def firmware_drift(self, baseline: Mapping[str, str]) -> dict[str, tuple[str, str]]:
        """Components whose version differs from ``baseline``: name -> (running, wanted)."""
        return firmware_drift(self.firmware, baseline)


def firmware_drift(running: Mapping[str, str], baseline: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Components of ``baseline`` (name -> wanted version) that ``running`` (name -> version) does not match:
    name -> (running version or ``missing``, wanted version)."""
    return {k: (running.get(k, "missing"), v) for k, v in baseline.items() if running.get(k) != v}


def _inventory(raw: Mapping[str, Any]) -> NodeHardware | None:
    """``raw`` as a ``NodeHardware`` when it is a whole inventory, else None."""
    try:
        return NodeHardware.from_dict(dict(raw))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class StoredHardware:
    """A node's ``hardware`` column as the control plane reads it back. It holds a whole ``NodeHardware``
    once inspection ran (parsed with ``NodeHardware.from_dict``: ``inventory``), possibly only part of one for
    a node registered through the API (``inventory`` None, the fields below read from what is there), plus
    what provisioning recorded: ``firmware_evidence`` (``controlplane.evidence.firmware.check``).

    ``su``/``slot``/``su_nodes``: the node's position (None where unknown); ``gpu_uuids`` in NVML order.
    """

    serial: str | None = None
    su: int | None = None
    slot: int | None = None
    su_nodes: int | None = None
    gpu_uuids: tuple[str, ...] = ()
    firmware_evidence: Mapping[str, Any] | None = None
    inventory: NodeHardware | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> StoredHardware:
        """Parse the column (None or ``{}``: nothing known yet)."""
        raw = raw or {}
        evidence = raw.get("firmware_evidence")
        inventory = _inventory(raw)
        if inventory is not None:
            pos = inventory.position
            return cls(
                serial=inventory.serial,
                su=pos.su if pos else None,
                slot=pos.slot if pos else None,
                su_nodes=pos.su_nodes if pos else None,
                gpu_uuids=tuple(g.uuid for g in inventory.gpus),
                firmware_evidence=evidence,
                inventory=inventory,
            )
        pos_raw = raw.get("position") or {}
        serial = raw.get("serial")
        return cls(
            serial=None if serial is None else str(serial),
            su=_int(pos_raw.get("su")),
            slot=_int(pos_raw.get("slot")),
            su_nodes=_int(pos_raw.get("su_nodes")),
            gpu_uuids=tuple(str(g["uuid"]) for g in raw.get("gpus") or () if isinstance(g, Mapping) and "uuid" in g),
            firmware_evidence=evidence,
        )
