"""The driver seam: how the control plane acts on nodes (CONTRIBUTING.md, "Seams").

Contract of every ``Driver`` (the digital twin ``velyrix.fleet.drivers.sim`` and real-hardware drivers):

* **Idempotent by request id.** Every mutating call takes a ``request_id`` chosen by the caller
  (e.g. ``"{cluster}/{generation}/provision/{node}"``). Submitting the same id again returns the same
  ``Operation`` and never repeats the side effect. A driver that restarted and forgot an id may run the
  request again; requests are written so that running one twice leaves the node as running it once
  ("set the image to X", "attach VLAN 1234"), so resubmitting after a crash is always safe.
* **Asynchronous.** A call submits work and returns at once with an ``Operation`` whose ``status`` is
  ``pending``, ``succeeded`` or ``failed``; callers poll ``operation(request_id)`` (or submit again).
  Results (inventory, measurements) come back in ``Operation.result``; failures in ``Operation.error``
  with ``Operation.retryable`` telling a temporary error (retry later) from a permanent one.
* **Eventually consistent.** Reads (``operation``, ``list_nodes``) may lag behind submitted work; a
  caller never infers completion from anything but a finished ``Operation``.
* Node names are the hostnames the driver reports in ``list_nodes``; an unknown name raises
  ``velyrix.errors.NotFoundError``.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from velyrix.fleet import hardware

PENDING = "pending"
"""Submitted, not finished."""
SUCCEEDED = "succeeded"
"""Finished; ``result`` holds the outcome."""
FAILED = "failed"
"""Finished with ``error``; ``retryable`` says whether resubmitting under a new request id may help."""


@dataclass
class Operation:
    """One submitted request and its outcome. Times are in the driver's clock (seconds)."""

    request_id: str
    kind: str
    node: str
    status: str = PENDING
    submitted_at_s: float = 0.0
    finished_at_s: float | None = None
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    retryable: bool = False

    @property
    def done(self) -> bool:
        return self.status != PENDING

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "kind": self.kind,
            "node": self.node,
            "status": self.status,
            "submitted_at_s": self.submitted_at_s,
            "finished_at_s": self.finished_at_s,
            "result": self.result,
            "error": self.error,
            "retryable": self.retryable,
        }


@dataclass(frozen=True)
class NetworkAttachment:
    """A tenant's networks on one node: Ethernet VLAN (802.1Q id) in a VRF, and on the compute fabric either
    an InfiniBand partition key (15-bit, 0x0001-0x7ffe; REFERENCE §1) or, on an Ethernet fabric (Spectrum-X,
    RoCE), a VXLAN network identifier (24-bit VNI; RFC 7348 §5). Exactly one of ``pkey`` and ``vni`` is set."""

    vlan: int
    vrf: str
    pkey: int | None = None
    vni: int | None = None

    def compute_isolation(self) -> str:
        """The compute fabric's isolation for people: ``partition key 0x0001`` or ``VNI 10001``."""
        return f"partition key {self.pkey:#06x}" if self.pkey is not None else f"VNI {self.vni}"

    def to_dict(self) -> dict[str, Any]:
        """``{"vlan", "vrf"}`` and ``pkey`` or ``vni``, whichever the fabric uses."""
        out: dict[str, Any] = {"vlan": self.vlan, "vrf": self.vrf}
        out.update({k: v for k, v in (("pkey", self.pkey), ("vni", self.vni)) if v is not None})
        return out


@dataclass(frozen=True)
class VolumeAttachment:
    """One tenant volume mounted on a node: id, storage tier, mount point and size (decimal TB)."""

    volume_id: str
    tier: str
    mount: str
    size_tb: float


class Driver(abc.ABC):
    """Acts on nodes. Every mutating method: idempotent by ``request_id``, asynchronous (returns an
    ``Operation``), eventually consistent (see the module docstring)."""

    name: str = "abstract"

    @abc.abstractmethod
    def list_nodes(self) -> list[str]:
        """Hostnames of every node the driver can reach (enrollment discovers nodes through this)."""

    @abc.abstractmethod
    def operation(self, request_id: str) -> Operation:
        """The current state of a submitted request; ``NotFoundError`` if this driver never saw it
        (e.g. it restarted): resubmit under the same id."""

    @abc.abstractmethod
    def inspect(self, node: str, *, request_id: str) -> Operation:
        """Read the node's inventory through its BMC. Result: ``{"hardware": NodeHardware.to_dict()}``."""

    @abc.abstractmethod
    def power(self, node: str, on: bool, *, request_id: str) -> Operation:
        """Power the node on (``on=True``) or off through its BMC. Result: ``{"powered": bool}``."""

    @abc.abstractmethod
    def provision(self, node: str, *, image: str, firmware: Mapping[str, str], request_id: str) -> Operation:
        """Install OS ``image`` and flash ``firmware`` (component -> version, the region's signed baseline);
        verify the running versions afterwards. Result: ``{"image": str, "firmware": {component: version},
        "firmware_sha256": {component: hex digest of the running image}, "secure_boot": {"enabled": bool,
        "mode": str}}`` (the last two as the BMC reports them: Redfish SecureBoot, firmware inventory)."""

    @abc.abstractmethod
    def attach_networks(self, node: str, networks: NetworkAttachment, *, request_id: str) -> Operation:
        """Put the node's in-band/storage ports in the tenant VLAN and VRF and its InfiniBand ports in the
        tenant partition (replacing any previous tenant's). Result: ``NetworkAttachment.to_dict``."""

    @abc.abstractmethod
    def detach_networks(self, node: str, *, request_id: str) -> Operation:
        """Move every port back to the provisioning network and the default partition."""

    @abc.abstractmethod
    def attach_storage(self, node: str, volumes: Sequence[VolumeAttachment], *, request_id: str) -> Operation:
        """Mount exactly ``volumes`` on the node (an empty list unmounts everything).
        Result: ``{"mounts": [volume ids]}``."""

    @abc.abstractmethod
    def run_acceptance(self, node: str, *, request_id: str, tests: Sequence[str] = ()) -> Operation:
        """Run the per-node delivery tests (``gpu_burn_in``, ``nvlink``, ``ib_ports``, ``local_nvme``; all
        when ``tests`` is empty) and report raw measurements; judging them is
        ``velyrix.fleet.acceptance.judge_node``. Result: see ``velyrix.fleet.acceptance.NodeMeasurements``."""

    @abc.abstractmethod
    def run_cluster_tests(
        self,
        nodes: Sequence[str],
        *,
        request_id: str,
        tests: Sequence[str] = (),
        volumes: Sequence[VolumeAttachment] = (),
        storage_network_gb_s: float | None = None,
    ) -> Operation:
        """Run cluster-wide tests across ``nodes`` (``all_reduce``: NCCL all-reduce bus bandwidth in GB/s;
        ``storage``: aggregate write/read GB/s from every node to the performance-tier ``volumes``, which
        cannot exceed ``storage_network_gb_s``, what the cluster's storage network carries, when given).
        Result: ``{"all_reduce_busbw_gb_s": float, "storage_write_gb_s": float, "storage_read_gb_s": float}``."""

    @abc.abstractmethod
    def reset_gpu(self, node: str, gpu: int, *, request_id: str) -> Operation:
        """Reset GPU ``gpu`` of the node (``nvidia-smi -r``: volatile ECC counts clear, pending row remaps
        are applied); the node must run no job on it. Result: ``{"gpu": int, "responsive": bool}``."""

    def upgrade(self, node: str, *, component: str, version: str, request_id: str) -> Operation:
        """Install ``version`` of catalog component ``component`` (``catalog/data/versions.toml``) and the
        components that follow it, rebooting when the component needs it; the caller drains first.
        Result: ``{"component", "from", "to", "booted": bool, "xids": [[gpu, xid], ...]}`` (XIDs logged
        since the install's boot). Drivers that cannot install components raise ``NotImplementedError``."""
        raise NotImplementedError(f"{type(self).__name__} cannot upgrade components")

    @abc.abstractmethod
    def reboot(self, node: str, *, request_id: str) -> Operation:
        """Reboot the node (power cycle through its BMC); GPUs that fell off the bus come back unless their
        part is broken. Result: ``{"booted_at_s": float}`` (the driver's clock)."""

    @abc.abstractmethod
    def sanitize(self, node: str, *, request_id: str) -> Operation:
        """Purge local NVMe (NIST SP 800-88), clear GPU memory, reset BMC users, power-cycle.
        Result: ``{"certificate": str, "method": "clear|purge|destroy", "media": [{type, name, serial,
        technique, ...}], "tool": str, "verification": {"method": str, "passed": bool}}`` (the facts of
        the NIST SP 800-88 certificate the control plane signs)."""

    def sanitize_volume(self, volume_id: str, tier: str, size_tb: float) -> dict[str, Any]:
        """Purge a deleted volume on its storage tier; result as ``sanitize`` (without ``certificate``).
        Drivers without a storage backend raise ``NotImplementedError`` (no certificate is then issued)."""
        raise NotImplementedError(f"{type(self).__name__} cannot sanitize volumes")

    def write_object(self, volume_id: str, name: str, data: bytes, data_key: bytes) -> dict[str, Any]:
        """Store ``data`` as object ``name`` of the volume, encrypted (AES-256-GCM) with ``data_key`` (32 bytes,
        the volume's data key, not kept). Result: ``{"bytes": int, "ciphertext_sha256": str}``."""
        raise NotImplementedError(f"{type(self).__name__} has no object storage")

    def read_object(self, volume_id: str, name: str, data_key: bytes) -> bytes:
        """The object ``name`` of the volume, decrypted with ``data_key``."""
        raise NotImplementedError(f"{type(self).__name__} has no object storage")

    def object_names(self, volume_id: str) -> list[str]:
        """The names of the volume's objects."""
        raise NotImplementedError(f"{type(self).__name__} has no object storage")


def parse_hardware(op: Operation) -> hardware.NodeHardware:
    """The inventory of a finished ``inspect`` operation."""
    return hardware.NodeHardware.from_dict(op.result["hardware"])
