"""``RedfishDriver``: the ``Driver`` seam over real BMCs, through ``sushy`` (``velyrix.fleet.drivers.redfish.bmc``).

What a BMC can do is done over Redfish: inspection (system and firmware inventory, secure boot), power,
boot override (PXE or virtual media), firmware update through ``UpdateService.SimpleUpdate`` (a task polled
until it completes), reboot, and reading the hardware event log. What needs the node's own operating system
or the network (tenant networks, mounts, acceptance tests, GPU resets, media purge) goes to ``in_band``,
another driver (on the twin: the twin's own ``SimDriver``); without one those requests fail, saying so.

The contract of ``velyrix.fleet.drivers.base`` holds: a request id is done once (resubmitting returns the
same ``Operation``); calls return at once and the work runs on a small thread pool; temporary BMC errors
(unreachable, HTTP 5xx) are retried ``attempts`` times with exponential backoff, then reported with
``retryable`` True; permanent ones (credentials refused, a request refused, a firmware task that failed or
never finished) fail at once. Every request is written to be safe to run twice (power to a state, boot
once from an image, flash a component only where it runs another version). A provisioning request that
fails after it set a boot override or inserted media takes both back before it reports, so the node boots
as before.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from velyrix import errors
from velyrix.fleet import hardware
from velyrix.fleet.drivers import base
from velyrix.fleet.drivers.redfish.bmc import Bmc, BmcEndpoint, BmcError

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class RedfishSettings:
    """Timing and sources of the Redfish driver (seconds of wall time).

    ``image_url``/``firmware_url``: templates of the installer image (``{image}``) and firmware image
    (``{component}``, ``{version}``) URLs the BMC fetches; ``boot``: ``virtual_media`` (insert the image into
    the virtual CD, boot it once) or ``pxe`` (boot once from the provisioning network)."""

    attempts: int = 3
    backoff_s: float = 1.0
    request_timeout_s: float = 10.0
    power_timeout_s: float = 120.0
    firmware_timeout_s: float = 1800.0
    poll_s: float = 1.0
    boot: str = "virtual_media"
    image_url: str = "http://127.0.0.1/images/{image}.iso"
    firmware_url: str = "http://127.0.0.1/firmware/{component}/{version}.bin"
    workers: int = 8


EndpointSource = Callable[[str], BmcEndpoint]
"""node hostname -> its BMC endpoint (credentials decrypted only for the call); unknown: ``NotFoundError``."""


class RedfishDriver(base.Driver):
    """Drives nodes through their BMCs. ``nodes``: the hostnames it may act on; ``endpoints``: where each
    BMC is (looked up per request, so rotated credentials take effect at once); ``in_band``: the driver for
    what a BMC cannot do. Operations are kept in memory (a restart forgets them; callers resubmit)."""

    name = "redfish"

    def __init__(
        self,
        nodes: Sequence[str],
        endpoints: EndpointSource,
        *,
        in_band: base.Driver | None = None,
        settings: RedfishSettings | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.nodes = list(nodes)
        self.endpoints = endpoints
        self.in_band = in_band
        self.settings = settings or RedfishSettings()
        self.sleep = sleep
        self._ops: dict[str, base.Operation] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=self.settings.workers, thread_name_prefix="redfish")
        self.calls = 0
        """Requests actually executed (not deduplicated)."""

    @property
    def network(self) -> Any:
        """The network driver of the fabric (the in-band driver's; None without one)."""
        return getattr(self.in_band, "network", None)

    def close(self) -> None:
        """Stop the worker threads (waits for running requests)."""
        self._pool.shutdown(wait=True)

    # --- plumbing -------------------------------------------------------------------------------

    def _node(self, node: str) -> None:
        if node not in self.nodes:
            raise errors.NotFoundError(kind="node", name=node)

    def _submit(self, kind: str, node: str, request_id: str, work: Callable[[Bmc], dict[str, Any]]) -> base.Operation:
        self._node(node)
        with self._lock:
            if request_id in self._ops:
                return self._ops[request_id]
            op = base.Operation(request_id=request_id, kind=kind, node=node, submitted_at_s=time.time())
            self._ops[request_id] = op
            self.calls += 1
        self._pool.submit(self._run, op, work)
        return op

    def _run(self, op: base.Operation, work: Callable[[Bmc], dict[str, Any]]) -> None:
        attempts = max(1, self.settings.attempts)
        for attempt in range(attempts):
            try:
                bmc = Bmc(self.endpoints(op.node), timeout_s=self.settings.request_timeout_s)
                op.result = work(bmc)
                op.status = base.SUCCEEDED
                break
            except BmcError as exc:
                if exc.retryable and attempt + 1 < attempts:
                    LOG.info("%s %s on %s: %s; retrying", op.kind, op.request_id, op.node, exc.message)
                    self.sleep(self.settings.backoff_s * 2**attempt)
                    continue
                tries = f" (after {attempt + 1} attempts)" if exc.retryable else ""
                op.error, op.retryable, op.status = exc.message + tries, exc.retryable, base.FAILED
                break
            except errors.VelyrixError as exc:
                op.error, op.retryable, op.status = exc.message, False, base.FAILED
                break
            except Exception as exc:  # a BMC answering nonsense: fail this request, keep the driver
                LOG.warning("%s %s on %s: unexpected %s", op.kind, op.request_id, op.node, type(exc).__name__)
                op.error = f"{op.kind} on {op.node}: unexpected {type(exc).__name__} from the BMC"
                op.retryable, op.status = False, base.FAILED
                break
        op.finished_at_s = time.time()

    def operation(self, request_id: str) -> base.Operation:
        op = self._ops.get(request_id)
        if op is None and self.in_band is not None:
            return self.in_band.operation(request_id)  # a request it passed on
        if op is None:
            raise errors.NotFoundError(kind="operation", name=request_id)
        return op

    def wait(self, request_id: str, timeout_s: float = 300.0) -> base.Operation:
        """Block until ``request_id`` finishes (at most ``timeout_s`` wall seconds); returns it."""
        deadline = time.monotonic() + timeout_s
        op = self.operation(request_id)
        while not op.done and time.monotonic() < deadline:
            time.sleep(0.05)
        return op

    def list_nodes(self) -> list[str]:
        return list(self.nodes)

    # --- BMC requests ---------------------------------------------------------------------------

    def inspect(self, node: str, *, request_id: str) -> base.Operation:
        def work(bmc: Bmc) -> dict[str, Any]:
            summary, firmware = bmc.summary(), bmc.firmware()
            versions = {c: f["version"] for c, f in firmware.items()}
            if self.in_band is not None:
                hw = self._merge(self._in_band_hardware(node, request_id), summary, versions, bmc)
                return {"hardware": hw.to_dict(), "system": summary, "secure_boot": bmc.secure_boot()}
            hw = hardware.NodeHardware(
                hostname=node,
                node_type=bmc.ep.node_type,
                serial=summary["serial"],
                gpus=(),
                nics=tuple(hardware.NICInfo(f"eth{i}", "inband", 0, m) for i, m in enumerate(summary["macs"])),
                bmc=hardware.BMCInfo(address=bmc.ep.address, mac="", firmware=bmc.manager_firmware()),
                nvme=(),
                firmware=versions,
            )
            return {"hardware": hw.to_dict(), "system": summary, "secure_boot": bmc.secure_boot()}

        return self._submit("inspect", node, request_id, work)

    def _in_band_hardware(self, node: str, request_id: str) -> hardware.NodeHardware:
        """The in-band driver's inventory of ``node`` (GPUs, NICs, NVMe, position), waited for."""
        assert self.in_band is not None
        rid = f"{request_id}/in-band"
        op = self.in_band.inspect(node, request_id=rid)
        deadline = time.monotonic() + self.settings.power_timeout_s
        while not op.done and time.monotonic() < deadline:
            self.sleep(self.settings.poll_s / 10)
            op = self.in_band.operation(rid)
        if op.status != base.SUCCEEDED:
            raise errors.ConflictError(f"in-band inspection of {node}: {op.error or 'did not finish'}")
        return base.parse_hardware(op)

    @staticmethod
    def _merge(
        hw: hardware.NodeHardware, summary: Mapping[str, Any], versions: Mapping[str, str], bmc: Bmc
    ) -> hardware.NodeHardware:
        """``hw`` with the BMC's firmware inventory; the BMC and the OS must agree on the serial."""
        if summary["serial"] and summary["serial"] != hw.serial:
            raise errors.ConflictError(
                f"BMC {bmc.ep.address} reports serial {summary['serial']}, the node's OS {hw.serial}: "
                "the BMC endpoint belongs to another server"
            )
        return dataclasses.replace(hw, firmware=dict(versions) or hw.firmware)

    def power(self, node: str, on: bool, *, request_id: str) -> base.Operation:
        def work(bmc: Bmc) -> dict[str, Any]:
            if bmc.power_state() != ("On" if on else "Off"):
                bmc.reset("On" if on else "ForceOff")
                bmc.wait_power(on, self.settings.power_timeout_s, self.settings.poll_s, self.sleep)
            return {"powered": on}

        return self._submit("power", node, request_id, work)

    def reboot(self, node: str, *, request_id: str) -> base.Operation:
        def work(bmc: Bmc) -> dict[str, Any]:
            bmc.reset("ForceRestart" if bmc.power_state() == "On" else "On")
            bmc.wait_power(True, self.settings.power_timeout_s, self.settings.poll_s, self.sleep)
            return {"booted_at_s": time.time()}

        return self._submit("reboot", node, request_id, work)

    def provision(self, node: str, *, image: str, firmware: Mapping[str, str], request_id: str) -> base.Operation:
        wanted = dict(firmware)

        def work(bmc: Bmc) -> dict[str, Any]:
            flashed = self._flash(bmc, wanted)
            boot = self._boot_image(bmc, image)
            running = bmc.firmware()
            return {
                "image": image,
                "boot": boot,
                "flashed": flashed,
                "firmware": {c: f["version"] for c, f in running.items()},
                "firmware_sha256": {c: f["sha256"] for c, f in running.items() if f["sha256"]},
                "secure_boot": bmc.secure_boot(),
            }

        return self._submit("provision", node, request_id, work)

    def hardware_events(self, node: str, *, request_id: str) -> base.Operation:
        """Read the node's hardware event log. Result: ``{"entries": [Bmc.log_entries rows]}``."""
        return self._submit("hardware_events", node, request_id, lambda bmc: {"entries": bmc.log_entries()})

    def update_firmware(self, node: str, firmware: Mapping[str, str], *, request_id: str) -> base.Operation:
        """Flash ``firmware`` (component -> version) where the node runs another version, without reinstalling
        it. Result: ``{"flashed": [components], "firmware": {component: version}}``."""
        wanted = dict(firmware)

        def work(bmc: Bmc) -> dict[str, Any]:
            flashed = self._flash(bmc, wanted)
            return {"flashed": flashed, "firmware": {c: f["version"] for c, f in bmc.firmware().items()}}

        return self._submit("update_firmware", node, request_id, work)

    def _flash(self, bmc: Bmc, wanted: Mapping[str, str]) -> list[str]:
        """SimpleUpdate every component of ``wanted`` whose running version differs, one at a time, each task
        polled to its end. Returns the components flashed."""
        flashed: list[str] = []
        if not wanted:
            return flashed
        inventory = bmc.firmware()
        for component, version in sorted(wanted.items()):
            have = inventory.get(component)
            if have is None:
                raise errors.ConflictError(
                    f"BMC {bmc.ep.address} lists no firmware component '{component}' "
                    f"(it has: {', '.join(sorted(inventory)) or 'none'})"
                )
            if have["version"] == version:
                continue
            url = self.settings.firmware_url.format(component=component, version=version)
            monitor = bmc.simple_update(url, have["uri"])
            bmc.wait_task(
                monitor,
                f"updating {component} to {version}",
                self.settings.firmware_timeout_s,
                self.settings.poll_s,
                self.sleep,
            )
            flashed.append(component)
        return flashed

    def _boot_image(self, bmc: Bmc, image: str) -> dict[str, Any]:
        """Boot the installer of ``image`` once (virtual CD or PXE), then power the node on or restart it.
        On a failure after the override was set, the override is cleared and the CD ejected again."""
        target = "Cd" if self.settings.boot == "virtual_media" else "Pxe"
        url = self.settings.image_url.format(image=image) if target == "Cd" else None
        inserted = False
        try:
            if url is not None:
                inserted = bmc.insert_cd(url)
            bmc.set_boot_once(target)
            on = bmc.power_state() == "On"
            bmc.reset("ForceRestart" if on else "On")
            bmc.wait_power(True, self.settings.power_timeout_s, self.settings.poll_s, self.sleep)
        except BaseException:
            self._undo_boot(bmc, inserted)
            raise
        return {"target": target, "image_url": url}

    @staticmethod
    def _undo_boot(bmc: Bmc, inserted: bool) -> None:
        for undo in (bmc.clear_boot_override, *((bmc.eject_cd,) if inserted else ())):
            try:
                undo()
            except BmcError as exc:  # the original error is what the caller must see
                LOG.warning("could not undo the boot override on %s: %s", bmc.ep.address, exc.message)

    # --- in-band requests -----------------------------------------------------------------------

    def _no_in_band(self, kind: str, node: str, request_id: str) -> base.Operation:
        self._node(node)
        with self._lock:
            if request_id not in self._ops:
                self._ops[request_id] = base.Operation(
                    request_id=request_id,
                    kind=kind,
                    node=node,
                    status=base.FAILED,
                    submitted_at_s=time.time(),
                    finished_at_s=time.time(),
                    error=f"{kind} needs the node's in-band agent or the network driver; "
                    "this Redfish driver has none configured (a BMC cannot do it)",
                )
            return self._ops[request_id]

    def attach_networks(self, node: str, networks: base.NetworkAttachment, *, request_id: str) -> base.Operation:
        if self.in_band is None:
            return self._no_in_band("attach_networks", node, request_id)
        return self.in_band.attach_networks(node, networks, request_id=request_id)

    def detach_networks(self, node: str, *, request_id: str) -> base.Operation:
        if self.in_band is None:
            return self._no_in_band("detach_networks", node, request_id)
        return self.in_band.detach_networks(node, request_id=request_id)

    def attach_storage(self, node: str, volumes: Sequence[base.VolumeAttachment], *, request_id: str) -> base.Operation:
        if self.in_band is None:
            return self._no_in_band("attach_storage", node, request_id)
        return self.in_band.attach_storage(node, volumes, request_id=request_id)

    def run_acceptance(self, node: str, *, request_id: str, tests: Sequence[str] = ()) -> base.Operation:
        if self.in_band is None:
            return self._no_in_band("acceptance", node, request_id)
        return self.in_band.run_acceptance(node, request_id=request_id, tests=tests)

    def run_cluster_tests(
        self,
        nodes: Sequence[str],
        *,
        request_id: str,
        tests: Sequence[str] = (),
        volumes: Sequence[base.VolumeAttachment] = (),
        storage_network_gb_s: float | None = None,
    ) -> base.Operation:
        if self.in_band is None:
            return self._no_in_band("cluster_tests", nodes[0] if nodes else "", request_id)
        return self.in_band.run_cluster_tests(
            nodes, request_id=request_id, tests=tests, volumes=volumes, storage_network_gb_s=storage_network_gb_s
        )

    def reset_gpu(self, node: str, gpu: int, *, request_id: str) -> base.Operation:
        if self.in_band is None:
            return self._no_in_band("reset_gpu", node, request_id)
        return self.in_band.reset_gpu(node, gpu, request_id=request_id)

    def sanitize(self, node: str, *, request_id: str) -> base.Operation:
        if self.in_band is None:
            return self._no_in_band("sanitize", node, request_id)
        return self.in_band.sanitize(node, request_id=request_id)
