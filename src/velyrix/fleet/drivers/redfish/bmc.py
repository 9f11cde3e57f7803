"""One BMC over Redfish, through ``sushy`` (OpenStack's Redfish library): where it is, how to log in, and the
calls the Redfish driver makes (``velyrix.fleet.drivers.redfish.driver``).

Every sushy error becomes a ``BmcError`` with a sentence a person can act on and ``retryable`` telling a
temporary failure (unreachable, HTTP 5xx) from a permanent one (credentials refused, a request the BMC
rejects, a task that failed or never finished). The password lives in a ``Secret``: its ``repr`` and ``str``
are ``***``, no message here carries it, and sushy sends it only in the Authorization header.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import sushy
from sushy import auth as sushy_auth
from sushy import exceptions as sushy_exc

from velyrix import errors


@dataclass(frozen=True)
class Secret:
    """A credential that never prints: ``repr``/``str`` give ``***``; ``reveal()`` gives the value."""

    _value: str = field(repr=False)

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"


@dataclass(frozen=True)
class BmcEndpoint:
    """Where a node's BMC answers and how to log in. ``address``: base URL (``https://10.0.7.21``, no path);
    ``system_id``: the ComputerSystem's Id under ``/redfish/v1/Systems/``; ``manager_id``: the Manager (BMC)
    holding the virtual media (default: the system's first ``ManagedBy``); ``verify_tls``: check the BMC's
    certificate (a CA bundle path or True/False); ``node_type``: the catalog node type it is."""

    address: str
    system_id: str
    username: str
    password: Secret
    manager_id: str | None = None
    verify_tls: bool | str = True
    node_type: str = ""


TASK_RUNNING = frozenset(
    {"New", "Starting", "Running", "Pending", "Stopping", "Suspended", "Interrupted", "Cancelling", "Service"}
)
"""Redfish TaskState values of a task that has not ended (Task schema, TaskState enum)."""


class BmcError(errors.VelyrixError):
    """A BMC call that did not do what was asked; ``retryable`` when trying again later may help."""

    code = "bmc_error"
    http_status = 502
    retryable = False


class BmcAuthError(BmcError):
    code = "bmc_auth_failed"
    template = "BMC {address} refused the credentials of user '{username}' (HTTP {status}) while {doing}"


class BmcUnreachableError(BmcError):
    code = "bmc_unreachable"
    retryable = True
    template = "BMC {address} is unreachable while {doing}: {reason}"


class BmcServerError(BmcError):
    code = "bmc_server_error"
    retryable = True
    template = "BMC {address} failed while {doing} (HTTP {status}): {reason}"


class BmcRequestError(BmcError):
    code = "bmc_request_refused"
    template = "BMC {address} refused {doing} (HTTP {status}): {reason}"


class BmcTaskError(BmcError):
    code = "bmc_task_failed"
    template = "{doing} on BMC {address}: {reason}"


@contextlib.contextmanager
def translated(ep: BmcEndpoint, doing: str) -> Iterator[None]:
    """Run the block, turning sushy's errors into ``BmcError`` subclasses that say what was being done."""
    try:
        yield
    except sushy_exc.AccessError as exc:
        raise BmcAuthError(
            address=ep.address,
            username=ep.username,
            status=exc.status_code,
            doing=doing,
            hint="store the node's current BMC credentials (velyrix admin bmc-credentials); nothing was changed",
        ) from None
    except sushy_exc.ConnectionError as exc:
        text = str(exc)
        errno = re.search(r"\[Errno -?\d+\] [^'\")]+", text)
        reason = errno.group(0) if errno else ("timed out" if "timed out" in text.lower() else text)
        raise BmcUnreachableError(address=ep.address, doing=doing, reason=_short(reason)) from None
    except sushy_exc.ServerSideError as exc:
        reason = _short(exc.detail)
        raise BmcServerError(address=ep.address, doing=doing, status=exc.status_code, reason=reason) from None
    except sushy_exc.HTTPError as exc:
        raise BmcRequestError(
            address=ep.address, doing=doing, status=exc.status_code, reason=_short(exc.detail)
        ) from None
    except sushy_exc.SushyError as exc:
        raise BmcRequestError(address=ep.address, doing=doing, status="-", reason=_short(str(exc))) from None


def _short(text: Any, limit: int = 300) -> str:
    return " ".join(str(text or "").split())[:limit]


class Bmc:
    """A logged-in view of one BMC's ComputerSystem (HTTP Basic authentication on every request).

    ``timeout_s``: per-request connect/read timeout (s). Construction reads the service root and the system
    (so a wrong password or an unreachable BMC fails here, before anything is changed)."""

    def __init__(self, ep: BmcEndpoint, *, timeout_s: float = 10.0) -> None:
        self.ep = ep
        with translated(ep, "logging in"):
            self.root: Any = sushy.Sushy(
                ep.address,
                auth=sushy_auth.BasicAuth(ep.username, ep.password.reveal()),
                verify=ep.verify_tls,
                server_side_retries=1,  # one try per call: the driver retries (and says so)
                read_timeout=timeout_s,
                connect_timeout=timeout_s,
            )
        with translated(ep, "reading the system"):
            self.system: Any = self.root.get_system(f"/redfish/v1/Systems/{ep.system_id}")

    def get_json(self, path: str, doing: str) -> dict[str, Any]:
        """The JSON body of ``path`` on the BMC."""
        with translated(self.ep, doing):
            body: dict[str, Any] = self.root._conn.get(path=path).json()
        return body

    # --- power and boot --------------------------------------------------------------------------

    def power_state(self) -> str:
        """``On``, ``Off`` (or ``PoweringOn``/``PoweringOff``), as the BMC reports it now."""
        with translated(self.ep, "reading the power state"):
            self.system.refresh(force=True)
            return str(self.system.power_state.value if self.system.power_state else "Unknown")

    def reset(self, reset_type: str) -> None:
        """POST ``ComputerSystem.Reset`` with ``reset_type`` (``On``, ``ForceOff``, ``ForceRestart``)."""
        with translated(self.ep, f"resetting the system ({reset_type})"):
            self.system.reset_system(sushy.ResetType(reset_type))

    def wait_power(self, on: bool, timeout_s: float, poll_s: float, sleep: Callable[[float], None]) -> None:
        """Poll until the system is powered ``on`` (or off); ``BmcTaskError`` after ``timeout_s``."""
        want = "On" if on else "Off"
        deadline = time.monotonic() + timeout_s
        state = self.power_state()
        while state != want:
            if time.monotonic() >= deadline:
                raise BmcTaskError(
                    doing=f"powering {'on' if on else 'off'}",
                    address=self.ep.address,
                    reason=f"the system still reports {state} after {timeout_s:g} s",
                )
            sleep(poll_s)
            state = self.power_state()

    def boot(self) -> dict[str, Any]:
        """The boot override now: ``{"target", "enabled", "mode"}`` (Redfish BootSourceOverride*)."""
        with translated(self.ep, "reading the boot settings"):
            self.system.refresh(force=True)
            b = self.system.boot
            return {
                "target": b.target.value if b.target else None,
                "enabled": b.enabled.value if b.enabled else None,
                "mode": b.mode.value if b.mode else None,
            }

    def set_boot_once(self, target: str) -> None:
        """Boot from ``target`` (``Pxe`` or ``Cd``) on the next boot only, in UEFI mode."""
        with translated(self.ep, f"setting a one-time boot from {target}"):
            self.system.set_system_boot_options(
                target=sushy.BootSource(target), enabled=sushy.BootSourceOverrideEnabled.ONCE
            )

    def clear_boot_override(self) -> None:
        """Turn the boot override off (the system boots from its own boot order)."""
        with translated(self.ep, "clearing the boot override"):
            self.system.set_system_boot_options(enabled=sushy.BootSourceOverrideEnabled.DISABLED)

    # --- virtual media ---------------------------------------------------------------------------

    def _cd(self) -> Any:
        with translated(self.ep, "finding the virtual CD"):
            managers = (
                [self.root.get_manager(f"/redfish/v1/Managers/{self.ep.manager_id}")]
                if self.ep.manager_id
                else self.system.managers
            )
            for manager in managers:
                for vm in manager.virtual_media.get_members():
                    types = {str(getattr(t, "value", t)) for t in vm.media_types or ()}
                    if types & {"CD", "DVD"}:
                        return vm
        raise BmcRequestError(
            address=self.ep.address, doing="virtual media boot", status="-", reason="the BMC has no virtual CD/DVD"
        )

    def insert_cd(self, url: str) -> bool:
        """Insert ``url`` into the virtual CD (ejecting another image first); False when it was already in."""
        vm = self._cd()
        with translated(self.ep, "inserting the virtual CD"):
            vm.refresh(force=True)
            if vm.inserted and vm.image == url:
                return False
            if vm.inserted:
                vm.eject_media()
            vm.insert_media(url, inserted=True, write_protected=True)
        return True

    def eject_cd(self) -> None:
        vm = self._cd()
        with translated(self.ep, "ejecting the virtual CD"):
            vm.refresh(force=True)
            if vm.inserted:
                vm.eject_media()

    # --- inventory, firmware, secure boot, logs ---------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """What the ComputerSystem says of itself: serial, manufacturer, model, BIOS, processors, MACs."""
        with translated(self.ep, "reading the system inventory"):
            s = self.system
            s.refresh(force=True)
            procs = s.processors.summary if s.json.get("Processors") else None
            nics = s.ethernet_interfaces.get_members() if s.json.get("EthernetInterfaces") else []
            macs = [e.mac_address for e in nics]
            return {
                "serial": s.serial_number or "",
                "manufacturer": s.manufacturer or "",
                "model": s.model or "",
                "bios_version": s.bios_version or "",
                "hostname": s.hostname or "",
                "power_state": s.power_state.value if s.power_state else None,
                "processors": {"count": procs.count, "architecture": str(procs.architecture)} if procs else None,
                "macs": [m for m in macs if m],
            }

    def manager_firmware(self) -> str:
        with translated(self.ep, "reading the BMC"):
            managers = self.system.managers
            return str(managers[0].firmware_version or "") if managers else ""

    def firmware(self) -> dict[str, dict[str, Any]]:
        """FirmwareInventory of this system: component -> ``{"version", "uri", "sha256"}``. The component is the
        member's SoftwareId (else its Id); a service holding several systems' inventories is narrowed to the
        members whose RelatedItem names this system. ``sha256``: the image digest when the BMC publishes one
        under ``Oem.Velyrix.ImageSHA256``, else None. Empty when the BMC has no inventory."""
        with translated(self.ep, "reading the firmware inventory"):
            try:
                members = self.root.get_update_service().firmware_inventory.get_members()
            except (sushy_exc.MissingAttributeError, sushy_exc.ResourceNotFoundError):
                return {}
            out: dict[str, dict[str, Any]] = {}
            for m in members:
                related = {r.get("@odata.id", "").rstrip("/") for r in m.json.get("RelatedItem") or ()}
                if related and self.system.path.rstrip("/") not in related:
                    continue
                out[m.software_id or m.identity] = {
                    "version": m.version or "",
                    "uri": m.path,
                    "sha256": ((m.json.get("Oem") or {}).get("Velyrix") or {}).get("ImageSHA256"),
                }
            return out

    def simple_update(self, image_uri: str, target_uri: str) -> Any:
        """POST ``UpdateService.SimpleUpdate`` of ``image_uri`` to ``target_uri``; returns sushy's TaskMonitor."""
        with translated(self.ep, f"starting the firmware update {image_uri}"):
            return self.root.get_update_service().simple_update(image_uri, targets=[target_uri])

    def wait_task(
        self, monitor: Any, doing: str, timeout_s: float, poll_s: float, sleep: Callable[[float], None]
    ) -> None:
        """Poll ``monitor`` until its task finishes; ``BmcTaskError`` when it ends other than Completed or is
        still running after ``timeout_s`` (s). The Task resource's own TaskState decides where the BMC names
        one (a monitor answering 200 before the task ends is not taken for its end)."""
        deadline = time.monotonic() + timeout_s
        task_uri = getattr(monitor.task, "path", None)
        while True:
            with translated(self.ep, doing):
                processing = monitor.check_is_processing
                if monitor.task is not None:
                    task_uri = monitor.task.path
            state = self.get_json(task_uri, doing).get("TaskState") if task_uri else None
            if state is not None:
                processing = state in TASK_RUNNING
            if not processing:
                if state in (None, "Completed"):
                    return
                raise BmcTaskError(doing=doing, address=self.ep.address, reason=f"the task {task_uri} ended {state}")
            if time.monotonic() >= deadline:
                raise BmcTaskError(
                    doing=doing,
                    address=self.ep.address,
                    reason=f"the task {task_uri or monitor.task_monitor_uri} is still {state or 'running'} "
                    f"after {timeout_s:g} s; the node's boot settings were not touched",
                )
            sleep(poll_s)

    def secure_boot(self) -> dict[str, Any]:
        """``{"enabled": bool, "mode": str, "current_boot": str}`` from the system's SecureBoot resource
        (``enabled`` False and mode ``absent`` when the BMC has none)."""
        with translated(self.ep, "reading the secure boot state"):
            if not self.system.json.get("SecureBoot"):
                return {"enabled": False, "mode": "absent", "current_boot": "absent"}
            sb = self.system.secure_boot
            sb.refresh(force=True)
            return {
                "enabled": bool(sb.enabled),
                "mode": str(getattr(sb.mode, "value", sb.mode) or ""),
                "current_boot": str(getattr(sb.current_boot, "value", sb.current_boot) or ""),
            }

    def log_entries(self, limit: int = 1000) -> list[dict[str, Any]]:
        """The system's hardware event log (its LogServices' entries), oldest first, at most ``limit``:
        ``{"id", "created", "severity", "message", "message_id", "service"}``. Empty when it has no log."""
        link = (self.system.json.get("LogServices") or {}).get("@odata.id")
        if not link:
            return []
        out: list[dict[str, Any]] = []
        for member in self.get_json(link, "listing the log services").get("Members", []):
            service = self.get_json(member["@odata.id"], "reading a log service")
            entries_link = (service.get("Entries") or {}).get("@odata.id")
            if not entries_link:
                continue
            for e in self.get_json(entries_link, "reading the log entries").get("Members", [])[:limit]:
                out.append(
                    {
                        "id": str(e.get("Id", "")),
                        "created": e.get("Created"),
                        "severity": e.get("Severity"),
                        "message": e.get("Message"),
                        "message_id": e.get("MessageId"),
                        "service": service.get("Id"),
                    }
                )
        return out[-limit:]
