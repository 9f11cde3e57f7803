"""``SimDriver``: the ``Driver`` seam over a ``SimRegion`` (the fake ships in the package: CONTRIBUTING.md, "Seams").

Each request finishes ``SimDelays`` simulated seconds after it was submitted (zero with ``SimDelays.off()``:
it finishes during the call). The effect happens when the request finishes, so a test sees the node as it
is at that moment. ``fail_next`` makes the next request of a kind on a node fail (temporary or permanent).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from velyrix import errors
from velyrix.catalog import reader
from velyrix.catalog import versions as catalog_versions
from velyrix.fleet import acceptance
from velyrix.fleet.drivers import base
from velyrix.fleet.drivers.sim import defects, models
from velyrix.fleet.drivers.sim.devices import SimNode
from velyrix.fleet.drivers.sim.network import SimNetwork
from velyrix.fleet.drivers.sim.region import SimRegion
from velyrix.fleet.drivers.sim.storage import SimStorage

STORAGE_EFFICIENCY = 0.92
"""Share of the tier model's nominal bandwidth the twin's storage test measures (assumption: p10 < it < 1)."""
CATCH_UP_WALL_S = 0.2
"""A request completing sees the twin's devices as of at most this many wall seconds ago
(``SimRegion.catch_up``): bringing the whole fleet up to the clock for every completed request made intake
of an n-node twin cost n^2 node steps. The runtime's ticker steps the fleet every wall second anyway."""


@dataclass(frozen=True)
class SimDelays:
    """Simulated seconds each kind of request takes (assumptions, typical of bare-metal provisioning)."""

    inspect_s: float = 120.0
    power_s: float = 30.0
    provision_s: float = 900.0
    networks_s: float = 20.0
    storage_s: float = 30.0
    acceptance_s: float = 1200.0
    cluster_tests_s: float = 600.0
    sanitize_s: float = 1800.0
    reset_s: float = 20.0
    reboot_s: float = 300.0

    @classmethod
    def off(cls) -> SimDelays:
        """Every request finishes during the call (benchmarks, crash tests)."""
        return cls(**{f.name: 0.0 for f in fields(cls)})


class SimDriver(base.Driver):
    """Drives a ``SimRegion``. Holds submitted operations in memory (a restart forgets them; callers resubmit)."""

    name = "sim"

    def __init__(self, region: SimRegion, delays: SimDelays | None = None) -> None:
        self.region = region
        self.delays = delays or SimDelays()
        self._ops: dict[str, base.Operation] = {}
        self._effects: dict[str, Callable[[], dict[str, Any]]] = {}
        self._due: dict[str, float] = {}
        self._fail_next: dict[tuple[str, str], tuple[str, bool]] = {}
        self._stuck_firmware: dict[str, dict[str, str]] = {}
        self._tampered_firmware: dict[str, set[str]] = {}
        self._secure_boot_off: set[str] = set()
        self.storage = SimStorage()
        """The storage tier's objects (ciphertext only; ``velyrix.fleet.drivers.sim.storage``)."""
        self.defects = defects.Defects()
        """Bad versions this twin ships (``velyrix.fleet.drivers.sim.defects``)."""
        self.installs: list[tuple[str, str, str]] = []
        """(node, component, version) of every install executed, in order: tests check that none repeats."""
        self.network = SimNetwork(region.clock.now)
        """The twin's fabric: the clusters' partitions, VLANs and VRFs as applied (``sim.network``)."""
        self.calls = 0
        """Requests actually executed (not deduplicated) — tests check idempotence with it."""
        self._touched: set[str] = set()

    # --- test hooks -----------------------------------------------------------------------------

    def stick_firmware(self, node: str, component: str, version: str) -> None:
        """Make flashing ``component`` on ``node`` silently leave ``version`` running (a bad flash)."""
        self.region.node(node)
        self._stuck_firmware.setdefault(node, {})[component] = version

    def tamper_firmware(self, node: str, component: str) -> None:
        """Make ``component`` on ``node`` run an image other than the published one (same version string)."""
        self.region.node(node)
        self._tampered_firmware.setdefault(node, set()).add(component)

    def disable_secure_boot(self, node: str) -> None:
        """Make ``node`` boot with UEFI Secure Boot off (as its Redfish SecureBoot resource would say)."""
        self.region.node(node)
        self._secure_boot_off.add(node)

    @property
    def secure_boot_off(self) -> set[str]:
        """The nodes booting with Secure Boot off (shared with the twin's Redfish SecureBoot resources)."""
        return self._secure_boot_off

    @staticmethod
    def firmware_image(component: str, version: str) -> bytes:
        """The twin's firmware image of ``component`` at ``version`` (what a vendor would ship)."""
        return f"velyrix-twin-firmware/{component}/{version}".encode()

    def fail_next(self, kind: str, node: str, error: str = "simulated failure", *, retryable: bool = True) -> None:
        """Make the next ``kind`` request (``provision``, ``inspect``...) on ``node`` fail with ``error``."""
        self.region.node(node)
        self._fail_next[(kind, node)] = (error, retryable)

    # --- plumbing -------------------------------------------------------------------------------

    def _submit(
        self, kind: str, node: str, request_id: str, delay_s: float, effect: Callable[[], dict[str, Any]]
    ) -> base.Operation:
        if request_id in self._ops:
            return self.operation(request_id)
        if node:
            self.region.node(node)
        now = self.region.clock.now()
        op = base.Operation(request_id=request_id, kind=kind, node=node, submitted_at_s=now)
        self._ops[request_id] = op
        self._effects[request_id] = effect
        self._due[request_id] = now + delay_s
        return self.operation(request_id)

    def operation(self, request_id: str) -> base.Operation:
        op = self._ops.get(request_id)
        if op is None:
            raise errors.NotFoundError(kind="operation", name=request_id)
        if op.done:
            return op
        now = self.region.clock.now()
        if now < self._due[request_id]:
            return op
        self.region.catch_up(CATCH_UP_WALL_S)
        effect = self._effects.pop(request_id)
        self.calls += 1
        failure = self._fail_next.pop((op.kind, op.node), None)
        if failure is not None:
            op.status, op.error, op.retryable = base.FAILED, failure[0], failure[1]
        else:
            try:
                with self.region.lock:
                    self._touched.add(op.node)
                    op.result = effect()
                op.status = base.SUCCEEDED
            except errors.VelyrixError as exc:
                op.status, op.error, op.retryable = base.FAILED, exc.message, False
        op.finished_at_s = max(now, self._due[request_id])
        return op

    def take_touched(self) -> set[str]:
        """Hostnames whose requests ran since the last call (what the driver may have changed on them:
        ``SimRegion.STATE_FIELDS``); the set starts over."""
        with self.region.lock:
            touched, self._touched = self._touched - {""}, set()
            return touched

    def list_nodes(self) -> list[str]:
        return list(self.region.nodes)

    # --- node operations ------------------------------------------------------------------------

    def inspect(self, node: str, *, request_id: str) -> base.Operation:
        def effect() -> dict[str, Any]:
            sim = self.region.node(node)
            if not sim.powered:
                raise errors.ConflictError(f"node '{node}' is powered off; power it on before inspection")
            return {"hardware": sim.hardware().to_dict()}

        return self._submit("inspect", node, request_id, self.delays.inspect_s, effect)

    def power(self, node: str, on: bool, *, request_id: str) -> base.Operation:
        def effect() -> dict[str, Any]:
            self.region.node(node).powered = on
            return {"powered": on}

        return self._submit("power", node, request_id, self.delays.power_s, effect)

    def provision(self, node: str, *, image: str, firmware: Mapping[str, str], request_id: str) -> base.Operation:
        wanted = dict(firmware)

        def effect() -> dict[str, Any]:
            sim = self.region.node(node)
            sim.powered = True
            sim.image = image
            sim.firmware.update(wanted)
            sim.firmware.update(self._stuck_firmware.get(node, {}))
            sim.tenant_data = True
            bad = self._tampered_firmware.get(node, set())
            digests = {
                c: hashlib.sha256(self.firmware_image(c, v) + (b"/tampered" if c in bad else b"")).hexdigest()
                for c, v in sim.firmware.items()
            }
            secure_boot = {"enabled": node not in self._secure_boot_off, "mode": "DeployedMode"}
            return {
                "image": image,
                "firmware": dict(sim.firmware),
                "firmware_sha256": digests,
                "secure_boot": secure_boot,
            }

        return self._submit("provision", node, request_id, self.delays.provision_s, effect)

    def attach_networks(self, node: str, networks: base.NetworkAttachment, *, request_id: str) -> base.Operation:
        def effect() -> dict[str, Any]:
            if (networks.pkey is None) == (networks.vni is None):
                raise errors.InvalidInputError("give the compute fabric a partition key or a VNI, one of them")
            if networks.pkey is not None and not 0x0001 <= networks.pkey <= 0x7FFE:
                raise errors.InvalidInputError(f"partition key {networks.pkey:#06x} is outside 0x0001-0x7ffe")
            if networks.vni is not None and not 1 <= networks.vni <= 0xFFFFFF:
                raise errors.InvalidInputError(f"VNI {networks.vni} is outside 1-16777215 (24 bits)")
            sim = self.region.node(node)
            sim.networks = networks.to_dict()
            return dict(sim.networks)

        return self._submit("attach_networks", node, request_id, self.delays.networks_s, effect)

    def detach_networks(self, node: str, *, request_id: str) -> base.Operation:
        def effect() -> dict[str, Any]:
            self.region.node(node).networks = None
            return {}

        return self._submit("detach_networks", node, request_id, self.delays.networks_s, effect)

    def attach_storage(self, node: str, volumes: Sequence[base.VolumeAttachment], *, request_id: str) -> base.Operation:
        wanted = list(volumes)

        def effect() -> dict[str, Any]:
            sim = self.region.node(node)
            sim.mounts = [v.volume_id for v in wanted]
            return {"mounts": list(sim.mounts)}

        return self._submit("attach_storage", node, request_id, self.delays.storage_s, effect)

    def run_acceptance(self, node: str, *, request_id: str, tests: Sequence[str] = ()) -> base.Operation:
        def effect() -> dict[str, Any]:
            return measure_node(self.region.node(node), request_id)

        return self._submit("acceptance", node, request_id, self.delays.acceptance_s, effect)

    def run_cluster_tests(
        self,
        nodes: Sequence[str],
        *,
        request_id: str,
        tests: Sequence[str] = (),
        volumes: Sequence[base.VolumeAttachment] = (),
        storage_network_gb_s: float | None = None,
    ) -> base.Operation:
        names = list(nodes)
        targets = list(volumes)

        def effect() -> dict[str, Any]:
            nodes_ = [self.region.node(n) for n in names]
            return self._cluster_measurements(nodes_, request_id, targets, storage_network_gb_s)

        return self._submit("cluster_tests", names[0] if names else "", request_id, self.delays.cluster_tests_s, effect)

    def reset_gpu(self, node: str, gpu: int, *, request_id: str) -> base.Operation:
        def effect() -> dict[str, Any]:
            sim = self.region.node(node)
            if not 0 <= gpu < len(sim.gpus):
                raise errors.InvalidInputError(f"node '{node}' has GPUs 0-{len(sim.gpus) - 1}, not {gpu}")
            g = sim.gpus[gpu]
            if g.responsive:
                g.reset()
            return {"gpu": gpu, "responsive": g.responsive}

        return self._submit("reset_gpu", node, request_id, self.delays.reset_s, effect)

    def reboot(self, node: str, *, request_id: str) -> base.Operation:
        def effect() -> dict[str, Any]:
            sim = self.region.node(node)
            sim.reboot(self.region.clock.now())
            return {"booted_at_s": sim.booted_at_s}

        return self._submit("reboot", node, request_id, self.delays.reboot_s, effect)

    def upgrade(self, node: str, *, component: str, version: str, request_id: str) -> base.Operation:
        delay_s = 60.0 * catalog_versions.component(component).install_minutes if self.delays.reboot_s else 0.0

        def effect() -> dict[str, Any]:
            self.installs.append((node, component, version))
            return self.defects.install(self.region.node(node), component, version, self.region.clock.now())

        return self._submit("upgrade", node, request_id, delay_s, effect)

    def sanitize(self, node: str, *, request_id: str) -> base.Operation:
        def effect() -> dict[str, Any]:
            sim = self.region.node(node)
            held = sim.tenant_data
            sim.image, sim.networks, sim.mounts, sim.tenant_data, sim.load_pct = None, None, [], False, 0.0
            sim.powered = True
            digest = hashlib.sha256(f"{node}/{request_id}".encode()).hexdigest()[:16]
            media = [
                {
                    "type": "NVMe SSD",
                    "name": d.name,
                    "serial": d.serial,
                    "capacity_tb": d.capacity_tb,
                    "technique": "cryptographic erase",
                    "command": f"nvme format /dev/{d.name} --ses=2",  # SES 2: cryptographic erase (NVMe base spec)
                }
                for d in sim.nvme
            ] + [
                {"type": "GPU memory (HBM)", "name": f"gpu{g.index}", "serial": g.serial, "technique": "overwrite"}
                for g in sim.gpus
            ]
            return {
                "certificate": f"nist-800-88-purge-{digest}",
                "method": "purge",
                "media": media,
                "tool": "velyrix twin sanitize (nvme-cli format semantics)",
                "verification": {
                    "method": "full: every medium read back after the erase",
                    "passed": not sim.tenant_data,
                    "held_tenant_data": held,
                },
            }

        return self._submit("sanitize", node, request_id, self.delays.sanitize_s, effect)

    def sanitize_volume(self, volume_id: str, tier: str, size_tb: float) -> dict[str, Any]:
        """The twin keeps no volume contents: it reports the purge a storage tier performs."""
        return {
            "method": "purge",
            "media": [{"type": f"{tier} volume", "name": volume_id, "capacity_tb": size_tb}],
            "technique": "cryptographic erase: the volume's data key destroyed, its extents deallocated",
            "tool": "velyrix twin storage",
            "verification": {"method": "full: the volume no longer exists on the tier", "passed": True},
        }

    def write_object(self, volume_id: str, name: str, data: bytes, data_key: bytes) -> dict[str, Any]:
        return self.storage.put(volume_id, name, data, data_key)

    def read_object(self, volume_id: str, name: str, data_key: bytes) -> bytes:
        return self.storage.get(volume_id, name, data_key)

    def object_names(self, volume_id: str) -> list[str]:
        return self.storage.names(volume_id)

    # --- measurements ---------------------------------------------------------------------------

    def _cluster_measurements(
        self,
        nodes: list[SimNode],
        request_id: str,
        volumes: list[base.VolumeAttachment],
        storage_network_gb_s: float | None = None,
    ) -> dict[str, Any]:
        """All-reduce and storage figures of ``nodes``; storage is bounded by the nodes' storage NICs, the
        tier and ``storage_network_gb_s`` (the cluster's planned storage plane, GB/s) when given."""
        if not nodes:
            return {"all_reduce_busbw_gb_s": 0.0, "storage_write_gb_s": 0.0, "storage_read_gb_s": 0.0}
        nt = reader.node_type(nodes[0].node_type)
        # ring all-reduce runs at the pace of the slowest rail: a node with a port down halves its rails' share
        worst = min(sum(1 for p in n.ib_ports if p.state == "ACTIVE") / max(1, len(n.ib_ports)) for n in nodes)
        busbw = acceptance.all_reduce_gb_s(nt.compute_nic_gbps) * worst * _jitter(request_id, "ar")
        if len(nodes) == 1:
            busbw = nt.nvlink_gb_s * acceptance.NVLINK_SHARE_OF_PEAK * _jitter(request_id, "ar")
        perf = [v for v in volumes if v.tier == "parallel_fs"]
        clients = len(nodes) * nt.storage_gb_s
        if storage_network_gb_s is not None:
            clients = min(clients, storage_network_gb_s)
        write = read = 0.0
        if perf:
            tier = reader.storage_tier("parallel_fs")
            size = sum(v.size_tb for v in perf)
            write = min(size * tier.param("write_gb_s_per_tb"), tier.param("max_write_gb_s"), clients)
            read = min(size * tier.param("read_gb_s_per_tb"), tier.param("max_read_gb_s"), clients)
        factor = STORAGE_EFFICIENCY * _jitter(request_id, "st")
        return {
            "all_reduce_busbw_gb_s": round(busbw, 2),
            "storage_write_gb_s": round(write * factor, 1),
            "storage_read_gb_s": round(read * factor, 1),
            "nodes": len(nodes),
        }


def _jitter(request_id: str, salt: str) -> float:
    # deterministic +-1% run-to-run variation, keyed by the request (same request, same figure)
    h = int(hashlib.sha256(f"{request_id}/{salt}".encode()).hexdigest()[:8], 16)
    return 1.0 + (h / 0xFFFFFFFF - 0.5) * 2 * models.NOISE


def measure_node(sim: SimNode, request_id: str = "") -> dict[str, Any]:
    """What the per-node delivery tests measure on ``sim`` right now (format: ``acceptance.NodeMeasurements``)."""
    nt = reader.node_type(sim.node_type)
    gpus = []
    for g in sim.gpus:
        g.refresh_measured()
        links = g.model.nvlink_links
        gpus.append(
            {
                "index": g.index,
                "uuid": g.uuid,
                "serial": g.serial,
                "responsive": g.responsive,
                "bf16_tflops": round(g.bf16_tflops_measured, 1),
                "hbm_gb_s": round(g.hbm_gb_s_measured, 1),
                "nvlink_links_up": g.nvlink_links_up if g.responsive else 0,
                "nvlink_links_total": links,
                "nvlink_gb_s": round(
                    nt.nvlink_gb_s
                    * acceptance.NVLINK_SHARE_OF_PEAK
                    * g.nvlink_links_up
                    / links
                    * _jitter(request_id, f"nv{g.index}"),
                    1,
                )
                if g.responsive
                else 0.0,
                "ecc_dbe_volatile": g.ecc_dbe_volatile,
                "remap_failure": g.remap_failure,
                "remap_pending": g.remap_pending,
                "throttle_reasons": g.throttle_reasons,
            }
        )
    # a VPI NIC runs its ports as Ethernet (RoCE) on a tenant network with a VNI, else as InfiniBand
    layer = "Ethernet" if sim.networks and sim.networks.get("vni") is not None else "InfiniBand"
    ports = [
        {
            "device": p.device,
            "port": p.port,
            "state": p.state,
            "rate_gbps": p.rate_gbps if p.state == "ACTIVE" else 0,
            "link_layer": layer,
        }
        for p in sim.ib_ports
    ]
    nvme = {
        "read_gb_s": round(sum(d.read_gb_s_measured for d in sim.nvme), 2),
        "write_gb_s": round(sum(d.write_gb_s_measured for d in sim.nvme), 2),
        "drives": len(sim.nvme),
        "media_errors": sum(d.media_errors for d in sim.nvme),
    }
    return {
        "node": sim.hostname,
        "node_type": sim.node_type,
        "serial": sim.serial,
        "gpus": gpus,
        "ib_ports": ports,
        "nvme": nvme,
        "firmware": dict(sim.firmware),
    }
