"""The twin's BMCs as Redfish resources (DMTF DSP0266 / DSP0268): JSON documents built from the live
``SimNode`` and the actions that change it. Served by ``velyrix.fleet.drivers.sim.redfish_service``.

One ComputerSystem per twin node (Id = hostname) with its serial, power state, boot override, SecureBoot
and a LogService whose entries are the twin's injected faults and their precursors; one Manager (the BMC)
per node with a virtual CD; an UpdateService whose FirmwareInventory lists every node's components and
whose SimpleUpdate runs as a Task on the twin's clock. Booting a node with a one-time override to its
virtual CD installs the image the CD holds (``.../<image>.iso``), as the installer on it would.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from velyrix import errors
from velyrix.fleet.drivers.sim.devices import SimNode
from velyrix.fleet.drivers.sim.region import SimRegion

V1 = "/redfish/v1"
RESET_TYPES = ("On", "ForceOff", "GracefulShutdown", "ForceRestart", "GracefulRestart", "PowerCycle")
BOOT_TARGETS = ("None", "Pxe", "Cd", "Hdd", "UefiShell")
BOOT_ENABLED = ("Disabled", "Once", "Continuous")


def firmware_image(component: str, version: str) -> bytes:
    """The twin vendor's image of ``component`` at ``version`` (as ``SimDriver.firmware_image``)."""
    return f"velyrix-twin-firmware/{component}/{version}".encode()


def odata(path: str, type_: str, **body: Any) -> dict[str, Any]:
    return {"@odata.id": path, "@odata.type": type_, **body}


def collection(path: str, type_name: str, name: str, members: list[str]) -> dict[str, Any]:
    return odata(
        path,
        f"#{type_name}.{type_name}",
        Name=name,
        Members=[{"@odata.id": m} for m in members],
        **{"Members@odata.count": len(members)},
    )


@dataclass
class Task:
    """A firmware update in progress: done at ``due_s`` (twin clock) unless the BMC hangs it."""

    id: str
    hostname: str
    component: str
    version: str
    started_s: float
    due_s: float
    state: str = "Running"
    message: str = ""


@dataclass
class BmcState:
    """What a twin BMC holds beyond the node itself: the boot override and the virtual CD."""

    boot_target: str = "None"
    boot_enabled: str = "Disabled"
    boot_mode: str = "UEFI"
    cd_image: str | None = None


@dataclass
class TwinBmcs:
    """The Redfish view and actions of every BMC of ``region``. ``update_s``: simulated seconds a firmware
    update takes; ``epoch_s``: Unix time of the twin's second 0 (log entry timestamps)."""

    region: SimRegion
    update_s: float = 0.0
    epoch_s: float = 0.0
    secure_boot_off: set[str] = field(default_factory=set)
    hung: set[str] = field(default_factory=set)
    """Nodes whose firmware updates never finish (test hook: ``hang_updates``)."""
    bmcs: dict[str, BmcState] = field(default_factory=dict)
    tasks: dict[str, Task] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def hang_updates(self, hostname: str) -> None:
        """Make every firmware update of ``hostname`` stay Running for ever (a BMC stuck mid-flash)."""
        self.region.node(hostname)
        self.hung.add(hostname)

    def node(self, hostname: str) -> SimNode:
        return self.region.node(hostname)

    def bmc(self, hostname: str) -> BmcState:
        self.node(hostname)
        return self.bmcs.setdefault(hostname, BmcState())

    def _time(self, at_s: float) -> str:
        return dt.datetime.fromtimestamp(self.epoch_s + at_s, dt.UTC).isoformat(timespec="seconds")

    # --- documents ------------------------------------------------------------------------------

    def root(self) -> dict[str, Any]:
        return odata(
            V1,
            "#ServiceRoot.v1_5_0.ServiceRoot",
            Id="RootService",
            Name="Velyrix twin Redfish service",
            RedfishVersion="1.6.0",
            UUID="7e1d4a62-0c55-4b8f-9d0a-" + hashlib.sha256(self.region.name.encode()).hexdigest()[:12],
            Systems={"@odata.id": f"{V1}/Systems"},
            Managers={"@odata.id": f"{V1}/Managers"},
            UpdateService={"@odata.id": f"{V1}/UpdateService"},
            TaskService={"@odata.id": f"{V1}/TaskService"},
            SessionService={"@odata.id": f"{V1}/SessionService"},
            Links={"Sessions": {"@odata.id": f"{V1}/SessionService/Sessions"}},
        )

    def system(self, hostname: str) -> dict[str, Any]:
        n, b = self.node(hostname), self.bmc(hostname)
        path = f"{V1}/Systems/{hostname}"
        return odata(
            path,
            "#ComputerSystem.v1_13_0.ComputerSystem",
            Id=hostname,
            Name=hostname,
            HostName=hostname,
            SystemType="Physical",
            Manufacturer="Velyrix twin",
            Model=n.node_type,
            SerialNumber=n.serial,
            PowerState="On" if n.powered else "Off",
            BiosVersion=n.firmware.get("bios", ""),
            Status={"State": "Enabled", "Health": "OK"},
            Boot={
                "BootSourceOverrideTarget": b.boot_target,
                "BootSourceOverrideEnabled": b.boot_enabled,
                "BootSourceOverrideMode": b.boot_mode,
                "BootSourceOverrideTarget@Redfish.AllowableValues": list(BOOT_TARGETS),
            },
            SecureBoot={"@odata.id": f"{path}/SecureBoot"},
            LogServices={"@odata.id": f"{path}/LogServices"},
            Links={"ManagedBy": [{"@odata.id": f"{V1}/Managers/{hostname}"}]},
            Actions={
                "#ComputerSystem.Reset": {
                    "target": f"{path}/Actions/ComputerSystem.Reset",
                    "ResetType@Redfish.AllowableValues": list(RESET_TYPES),
                }
            },
        )

    def secure_boot(self, hostname: str) -> dict[str, Any]:
        self.node(hostname)
        on = hostname not in self.secure_boot_off
        return odata(
            f"{V1}/Systems/{hostname}/SecureBoot",
            "#SecureBoot.v1_1_0.SecureBoot",
            Id="SecureBoot",
            Name="UEFI Secure Boot",
            SecureBootEnable=on,
            SecureBootCurrentBoot="Enabled" if on else "Disabled",
            SecureBootMode="DeployedMode",
        )

    def log_service(self, hostname: str) -> dict[str, Any]:
        self.node(hostname)
        path = f"{V1}/Systems/{hostname}/LogServices/Log"
        return odata(
            path,
            "#LogService.v1_1_0.LogService",
            Id="Log",
            Name="Hardware events",
            ServiceEnabled=True,
            OverWritePolicy="WrapsWhenFull",
            Entries={"@odata.id": f"{path}/Entries"},
        )

    def log_entries(self, hostname: str) -> list[dict[str, Any]]:
        self.node(hostname)
        base = f"{V1}/Systems/{hostname}/LogServices/Log/Entries"
        out = []
        for i, ev in enumerate(e for e in self.region.events if e.hostname == hostname):
            f = ev.fault
            what = f"XID {f.xid}" if f.kind == "xid" else f.kind
            device = f"GPU {f.gpu or 0}" if f.port is None and f.drive is None else f"port {f.port}"
            if f.drive is not None:
                device = f"NVMe {f.drive}"
            message = f"{what} on {device}" if ev.kind == "fault" else f"precursor of {what} on {device}"
            out.append(
                odata(
                    f"{base}/{i + 1}",
                    "#LogEntry.v1_8_0.LogEntry",
                    Id=str(i + 1),
                    Name=f"Event {i + 1}",
                    EntryType="Event",
                    Severity="Critical" if ev.kind == "fault" else "Warning",
                    Created=self._time(ev.at_s),
                    Message=message,
                )
            )
        return out

    def manager(self, hostname: str) -> dict[str, Any]:
        n = self.node(hostname)
        path = f"{V1}/Managers/{hostname}"
        return odata(
            path,
            "#Manager.v1_10_0.Manager",
            Id=hostname,
            Name=f"BMC of {hostname}",
            ManagerType="BMC",
            FirmwareVersion=n.bmc.firmware,
            Status={"State": "Enabled", "Health": "OK"},
            VirtualMedia={"@odata.id": f"{path}/VirtualMedia"},
            Links={"ManagerForServers": [{"@odata.id": f"{V1}/Systems/{hostname}"}]},
        )

    def virtual_cd(self, hostname: str) -> dict[str, Any]:
        b = self.bmc(hostname)
        path = f"{V1}/Managers/{hostname}/VirtualMedia/Cd"
        return odata(
            path,
            "#VirtualMedia.v1_3_0.VirtualMedia",
            Id="Cd",
            Name="Virtual CD",
            MediaTypes=["CD", "DVD"],
            Image=b.cd_image,
            Inserted=b.cd_image is not None,
            WriteProtected=True,
            ConnectedVia="URI" if b.cd_image else "NotConnected",
            Actions={
                "#VirtualMedia.InsertMedia": {"target": f"{path}/Actions/VirtualMedia.InsertMedia"},
                "#VirtualMedia.EjectMedia": {"target": f"{path}/Actions/VirtualMedia.EjectMedia"},
            },
        )

    def firmware_ids(self) -> list[str]:
        return [f"{h}.{c}" for h, n in self.region.nodes.items() for c in sorted(n.firmware)]

    def software(self, member: str) -> dict[str, Any]:
        hostname, _, component = member.partition(".")
        n = self.node(hostname)
        if component not in n.firmware:
            raise errors.NotFoundError(kind="firmware component", name=member)
        version = n.firmware[component]
        return odata(
            f"{V1}/UpdateService/FirmwareInventory/{member}",
            "#SoftwareInventory.v1_2_0.SoftwareInventory",
            Id=member,
            Name=f"{component} of {hostname}",
            SoftwareId=component,
            Version=version,
            Updateable=True,
            Status={"State": "Enabled", "Health": "OK"},
            RelatedItem=[{"@odata.id": f"{V1}/Systems/{hostname}"}],
            Oem={"Velyrix": {"ImageSHA256": hashlib.sha256(firmware_image(component, version)).hexdigest()}},
        )

    def task(self, task_id: str) -> dict[str, Any]:
        t = self.tasks.get(task_id)
        if t is None:
            raise errors.NotFoundError(kind="task", name=task_id)
        self._progress(t)
        body = odata(
            f"{V1}/TaskService/Tasks/{t.id}",
            "#Task.v1_4_0.Task",
            Id=t.id,
            Name=f"Update {t.component} of {t.hostname} to {t.version}",
            TaskState=t.state,
            TaskStatus="OK" if t.state != "Exception" else "Critical",
            StartTime=self._time(t.started_s),
            TaskMonitor=f"{V1}/TaskService/TaskMonitors/{t.id}",
            Messages=[{"MessageId": "Base.1.8.Success", "Message": t.message}] if t.message else [],
        )
        if t.state != "Running":
            body["EndTime"] = self._time(t.due_s)
        return body

    # --- actions --------------------------------------------------------------------------------

    def reset(self, hostname: str, reset_type: str) -> None:
        if reset_type not in RESET_TYPES:
            raise errors.InvalidInputError(f"ResetType '{reset_type}' is not one of {', '.join(RESET_TYPES)}")
        with self.lock, self.region.lock:
            n, b = self.node(hostname), self.bmc(hostname)
            if reset_type in ("ForceOff", "GracefulShutdown"):
                n.powered = False
                return
            if reset_type == "On" and n.powered:
                return
            n.reboot(self.region.clock.now())
            if b.boot_enabled != "Disabled" and b.boot_target == "Cd" and b.cd_image:
                n.image = urlparse(b.cd_image).path.rsplit("/", 1)[-1].removesuffix(".iso")
                n.tenant_data = True
            if b.boot_enabled == "Once":
                b.boot_enabled, b.boot_target = "Disabled", "None"

    def patch_boot(self, hostname: str, boot: dict[str, Any]) -> None:
        b = self.bmc(hostname)
        target = boot.get("BootSourceOverrideTarget", b.boot_target)
        enabled = boot.get("BootSourceOverrideEnabled", b.boot_enabled)
        mode = boot.get("BootSourceOverrideMode", b.boot_mode)
        if target not in BOOT_TARGETS or enabled not in BOOT_ENABLED or mode not in ("UEFI", "Legacy"):
            raise errors.InvalidInputError(f"unsupported boot override {boot}")
        with self.lock:
            b.boot_target, b.boot_enabled, b.boot_mode = target, enabled, mode

    def insert_media(self, hostname: str, image: str | None) -> None:
        if image is not None and urlparse(image).scheme not in ("http", "https"):
            raise errors.InvalidInputError(f"Image must be an http(s) URL, got {image!r}")
        with self.lock:
            self.bmc(hostname).cd_image = image

    def simple_update(self, image_uri: str, targets: list[str]) -> Task:
        """Start flashing ``image_uri`` (``.../<component>/<version>.bin``) onto the one target (a
        FirmwareInventory member URI). Returns the task."""
        if len(targets) != 1:
            raise errors.InvalidInputError("give exactly one Targets entry (a FirmwareInventory member)")
        member = targets[0].rstrip("/").rsplit("/", 1)[-1]
        hostname, _, component = member.partition(".")
        self.software(member)  # 404 for an unknown component
        parts = urlparse(image_uri).path.rstrip("/").split("/")
        if len(parts) < 2 or parts[-2] != component:
            raise errors.InvalidInputError(f"ImageURI {image_uri!r} is not an image of {component} (…/{component}/V)")
        version = parts[-1].removesuffix(".bin")
        now = self.region.clock.now()
        with self.lock:
            t = Task(str(len(self.tasks) + 1), hostname, component, version, now, now + self.update_s)
            self.tasks[t.id] = t
        return t

    def _progress(self, t: Task) -> None:
        with self.lock:
            if t.state != "Running" or t.hostname in self.hung or self.region.clock.now() < t.due_s:
                return
            with self.region.lock:
                self.node(t.hostname).firmware[t.component] = t.version
            t.state, t.message = "Completed", f"{t.component} is now {t.version}"

    def task_running(self, task_id: str) -> bool:
        self.task(task_id)
        return self.tasks[task_id].state == "Running"
