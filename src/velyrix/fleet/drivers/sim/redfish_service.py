"""The twin's Redfish service on loopback (``velyrix up --redfish-port PORT``): the resources of
``velyrix.fleet.drivers.sim.redfish_resources`` over HTTP, so that the Redfish driver provisions twin nodes
as it provisions real ones.

HTTP Basic authentication on everything but the service root, ``/redfish/v1/odata`` and ``$metadata``
(DSP0266 §13.3: those are readable without it); a wrong password is 401 with a Redfish error body. Request
bodies are limited to 64 KiB. ``RedfishService(bmcs, username, password).close()`` stops it.
"""

from __future__ import annotations

import hmac
import json
import re
import threading
from base64 import b64decode
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from velyrix import errors
from velyrix.fleet.drivers.sim.redfish_resources import V1, TwinBmcs, collection

MAX_BODY_BYTES = 64 * 1024
PUBLIC = (V1, f"{V1}/", f"{V1}/odata", f"{V1}/$metadata")

# The DMTF schema files each type lives in (DSP8010, referenced by URL, not copied): $metadata lists them.
SCHEMAS = {
    "ServiceRoot": "ServiceRoot.v1_5_0",
    "ComputerSystemCollection": None,
    "ComputerSystem": "ComputerSystem.v1_13_0",
    "SecureBoot": "SecureBoot.v1_1_0",
    "LogServiceCollection": None,
    "LogService": "LogService.v1_1_0",
    "LogEntryCollection": None,
    "LogEntry": "LogEntry.v1_8_0",
    "ManagerCollection": None,
    "Manager": "Manager.v1_10_0",
    "VirtualMediaCollection": None,
    "VirtualMedia": "VirtualMedia.v1_3_0",
    "UpdateService": "UpdateService.v1_8_0",
    "SoftwareInventoryCollection": None,
    "SoftwareInventory": "SoftwareInventory.v1_2_0",
    "TaskService": "TaskService.v1_1_0",
    "TaskCollection": None,
    "Task": "Task.v1_4_0",
    "SessionService": "SessionService.v1_1_0",
    "SessionCollection": None,
}


def metadata_xml() -> str:
    """The service's OData CSDL document: a reference per DMTF schema it uses, and its entity container."""
    refs = []
    for name, versioned in SCHEMAS.items():
        includes = f'<edmx:Include Namespace="{name}"/>'
        if versioned:
            includes += f'<edmx:Include Namespace="{versioned}"/>'
        refs.append(
            f'  <edmx:Reference Uri="http://redfish.dmtf.org/schemas/v1/{name}_v1.xml">{includes}</edmx:Reference>'
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">\n'
        + "\n".join(refs)
        + '\n  <edmx:DataServices><Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">'
        '<EntityContainer Name="Service" Extends="ServiceRoot.v1_5_0.ServiceContainer"/></Schema>'
        "</edmx:DataServices>\n</edmx:Edmx>\n"
    )


def _error(status: int, message: str) -> dict[str, Any]:
    ids = {
        400: "Base.1.8.PropertyValueFormatError",
        401: "Base.1.8.NoValidSession",
        404: "Base.1.8.ResourceMissingAtURI",
    }
    mid = ids.get(status, "Base.1.8.GeneralError")
    return {
        "error": {"code": mid, "message": message, "@Message.ExtendedInfo": [{"MessageId": mid, "Message": message}]}
    }


Route = tuple[str, re.Pattern[str], Callable[..., Any]]


def _routes(b: TwinBmcs) -> list[Route]:
    h = r"(?P<h>[^/]+)"
    t = r"(?P<t>[^/]+)"
    sysp, mgrp = f"{V1}/Systems/{h}", f"{V1}/Managers/{h}"

    def hosts() -> list[str]:
        return list(b.region.nodes)

    table: list[tuple[str, str, Callable[..., Any]]] = [
        ("GET", V1 + "/?", lambda: b.root()),
        (
            "GET",
            f"{V1}/odata",
            lambda: {
                "@odata.context": f"{V1}/$metadata",
                "value": [{"name": "Service", "kind": "Singleton", "url": V1}],
            },
        ),
        (
            "GET",
            f"{V1}/Systems",
            lambda: collection(
                f"{V1}/Systems", "ComputerSystemCollection", "Systems", [f"{V1}/Systems/{x}" for x in hosts()]
            ),
        ),
        ("GET", sysp, lambda h: b.system(h)),
        ("PATCH", sysp, lambda h, body: b.patch_boot(h, dict(body.get("Boot") or {}))),
        ("POST", f"{sysp}/Actions/ComputerSystem.Reset", lambda h, body: b.reset(h, str(body.get("ResetType")))),
        ("GET", f"{sysp}/SecureBoot", lambda h: b.secure_boot(h)),
        (
            "GET",
            f"{sysp}/LogServices",
            lambda h: collection(
                f"{V1}/Systems/{h}/LogServices",
                "LogServiceCollection",
                "Log services",
                [f"{V1}/Systems/{h}/LogServices/Log"],
            ),
        ),
        ("GET", f"{sysp}/LogServices/Log", lambda h: b.log_service(h)),
        ("GET", f"{sysp}/LogServices/Log/Entries", lambda h: _entries(b, h)),
        ("GET", f"{sysp}/LogServices/Log/Entries/{t}", lambda h, t: _entry(b, h, t)),
        (
            "GET",
            f"{V1}/Managers",
            lambda: collection(
                f"{V1}/Managers", "ManagerCollection", "Managers", [f"{V1}/Managers/{x}" for x in hosts()]
            ),
        ),
        ("GET", mgrp, lambda h: b.manager(h)),
        (
            "GET",
            f"{mgrp}/VirtualMedia",
            lambda h: collection(
                f"{V1}/Managers/{h}/VirtualMedia",
                "VirtualMediaCollection",
                "Virtual media",
                [f"{V1}/Managers/{h}/VirtualMedia/Cd"],
            ),
        ),
        ("GET", f"{mgrp}/VirtualMedia/Cd", lambda h: b.virtual_cd(h)),
        (
            "POST",
            f"{mgrp}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia",
            lambda h, body: b.insert_media(h, str(body.get("Image") or "")),
        ),
        ("POST", f"{mgrp}/VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia", lambda h, body: b.insert_media(h, None)),
        ("GET", f"{V1}/UpdateService", lambda: _update_service()),
        (
            "GET",
            f"{V1}/UpdateService/FirmwareInventory",
            lambda: collection(
                f"{V1}/UpdateService/FirmwareInventory",
                "SoftwareInventoryCollection",
                "Firmware",
                [f"{V1}/UpdateService/FirmwareInventory/{m}" for m in b.firmware_ids()],
            ),
        ),
        ("GET", f"{V1}/UpdateService/FirmwareInventory/{t}", lambda t: b.software(t)),
        ("GET", f"{V1}/TaskService", lambda: _task_service()),
        (
            "GET",
            f"{V1}/TaskService/Tasks",
            lambda: collection(
                f"{V1}/TaskService/Tasks", "TaskCollection", "Tasks", [f"{V1}/TaskService/Tasks/{x}" for x in b.tasks]
            ),
        ),
        ("GET", f"{V1}/TaskService/Tasks/{t}", lambda t: b.task(t)),
        ("GET", f"{V1}/SessionService", lambda: _session_service()),
        (
            "GET",
            f"{V1}/SessionService/Sessions",
            lambda: collection(f"{V1}/SessionService/Sessions", "SessionCollection", "Sessions", []),
        ),
    ]
    return [(m, re.compile(p + "$"), f) for m, p, f in table]


def _entries(b: TwinBmcs, h: str) -> dict[str, Any]:
    body = collection(f"{V1}/Systems/{h}/LogServices/Log/Entries", "LogEntryCollection", "Log entries", [])
    rows = b.log_entries(h)
    body["Members"], body["Members@odata.count"] = rows, len(rows)
    return body


def _entry(b: TwinBmcs, h: str, entry_id: str) -> dict[str, Any]:
    for e in b.log_entries(h):
        if e["Id"] == entry_id:
            return e
    raise errors.NotFoundError(kind="log entry", name=entry_id)


def _update_service() -> dict[str, Any]:
    return {
        "@odata.id": f"{V1}/UpdateService",
        "@odata.type": "#UpdateService.v1_8_0.UpdateService",
        "Id": "UpdateService",
        "Name": "Update service",
        "ServiceEnabled": True,
        "FirmwareInventory": {"@odata.id": f"{V1}/UpdateService/FirmwareInventory"},
        "Actions": {
            "#UpdateService.SimpleUpdate": {
                "target": f"{V1}/UpdateService/Actions/UpdateService.SimpleUpdate",
                "TransferProtocol@Redfish.AllowableValues": ["HTTP", "HTTPS"],
            }
        },
    }


def _task_service() -> dict[str, Any]:
    return {
        "@odata.id": f"{V1}/TaskService",
        "@odata.type": "#TaskService.v1_1_0.TaskService",
        "Id": "TaskService",
        "Name": "Task service",
        "ServiceEnabled": True,
        "Tasks": {"@odata.id": f"{V1}/TaskService/Tasks"},
    }


def _session_service() -> dict[str, Any]:
    return {
        "@odata.id": f"{V1}/SessionService",
        "@odata.type": "#SessionService.v1_1_0.SessionService",
        "Id": "SessionService",
        "Name": "Session service (the twin takes HTTP Basic authentication only)",
        "ServiceEnabled": False,
        "Sessions": {"@odata.id": f"{V1}/SessionService/Sessions"},
    }


class _Handler(BaseHTTPRequestHandler):
    bmcs: TwinBmcs
    routes: list[Route]
    username: str
    password: str
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None, ctype: str = "") -> None:
        data = b"" if body is None else (body.encode() if isinstance(body, str) else json.dumps(body).encode())
        self.send_response(status)
        self.send_header("Content-Type", ctype or "application/json;charset=utf-8")
        self.send_header("OData-Version", "4.0")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection or (self.headers.get("Connection") or "").lower() == "close":
            self.send_header("Connection", "close")  # sushy asks for it; said back, the client never reuses
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        raw = self.headers.get("Authorization", "")
        if not raw.startswith("Basic "):
            return False
        try:
            user, _, pw = b64decode(raw[6:], validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        return hmac.compare_digest(user, self.username) & hmac.compare_digest(pw, self.password)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise errors.InvalidInputError(f"request body over {MAX_BODY_BYTES} bytes")
        raw = self.rfile.read(length) if length else b"{}"
        body = json.loads(raw or b"{}")
        if not isinstance(body, dict):
            raise errors.InvalidInputError("the request body must be a JSON object")
        return body

    def _handle(self, method: str) -> None:
        path = self.path.split("?", 1)[0]
        if path == f"{V1}/$metadata":
            return self._send(200, metadata_xml(), ctype="application/xml")
        if path not in PUBLIC and not self._authorized():
            return self._send(401, _error(401, "authentication required"), {"WWW-Authenticate": 'Basic realm="BMC"'})
        try:
            body = self._body() if method in ("POST", "PATCH") else {}
            if method == "POST" and path == f"{V1}/UpdateService/Actions/UpdateService.SimpleUpdate":
                return self._simple_update(body)
            if method == "GET" and (m := re.fullmatch(f"{V1}/TaskService/TaskMonitors/([^/]+)", path)):
                return self._monitor(m.group(1))
            for verb, pattern, fn in self.routes:
                m = pattern.match(path)
                if m and verb == method:
                    out = fn(*m.groups(), body) if method in ("POST", "PATCH") else fn(*m.groups())
                    return self._send(200, out) if out is not None else self._send(204)
            known = any(p.match(path) for _, p, _ in self.routes)
            self._send(405 if known else 404, _error(405 if known else 404, f"{method} {path} is not supported"))
        except errors.NotFoundError as exc:
            self._send(404, _error(404, exc.message))
        except (errors.InvalidInputError, ValueError) as exc:
            self._send(400, _error(400, getattr(exc, "message", str(exc))))

    def _simple_update(self, body: dict[str, Any]) -> None:
        targets = body.get("Targets") or []
        if not isinstance(targets, list):
            raise errors.InvalidInputError("Targets must be a list of URIs")
        task = self.bmcs.simple_update(str(body.get("ImageURI") or ""), [str(t) for t in targets])
        monitor = f"{V1}/TaskService/TaskMonitors/{task.id}"
        self._send(202, self.bmcs.task(task.id), {"Location": monitor})

    def _monitor(self, task_id: str) -> None:
        doc = self.bmcs.task(task_id)
        if self.bmcs.task_running(task_id):
            return self._send(202, doc, {"Location": f"{V1}/TaskService/TaskMonitors/{task_id}"})
        self._send(200, doc)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")


class RedfishService:
    """``bmcs`` served on ``host:port`` (0: a free port) behind ``username``/``password``."""

    def __init__(self, bmcs: TwinBmcs, username: str, password: str, host: str = "127.0.0.1", port: int = 0) -> None:
        handler = type(
            "Handler", (_Handler,), {"bmcs": bmcs, "routes": _routes(bmcs), "username": username, "password": password}
        )
        try:
            self.httpd = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            raise errors.InvalidInputError(
                f"cannot listen on {host}:{port}: {exc.strerror}", hint="choose another --redfish-port"
            ) from exc
        self.httpd.daemon_threads = True
        self.bmcs = bmcs
        self.host, self.port = host, int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, name=f"redfish:{self.port}", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
