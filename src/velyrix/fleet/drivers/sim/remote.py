"""One twin shared by several control-plane replicas: the ``SimDriver`` served over HTTP, and its client.

A real region's hardware is one thing every replica drives; so is a twin served by one process
(``velyrix sim serve``): ``TwinService`` exposes a ``SimDriver`` at ``POST /v1/driver/<method>`` (JSON in, JSON
out, a bearer token, 1 MiB bodies at most) and ``TwinClient`` is a ``Driver`` that forwards each call there
(``velyrix server --fleet-driver URL``). Request ids keep their meaning across replicas: the twin dedupes them
whichever replica submits, so a replica that takes over a cluster polls the operations its predecessor
started instead of starting them again.

The service records every request it executes (``GET /v1/driver/ledger``: request id, kind, node, the replica
that submitted it first, and how many replicas submitted it), which is what benchmarks count duplicated
driver requests from (bench/bench_replicas.py).
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from velyrix import errors
from velyrix.fleet.drivers import base
from velyrix.fleet.drivers.sim.driver import SimDriver

log = logging.getLogger("velyrix.fleet")
MAX_BODY_BYTES = 1 << 20
"""Largest request body the service reads (a provision request is ~1 KB; objects are small in the twin)."""
REPLICA_HEADER = "X-Velyrix-Replica"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _op(value: dict[str, Any]) -> base.Operation:
    fields = {k: value[k] for k in base.Operation.__dataclass_fields__ if k in value}
    return base.Operation(**fields)


def _volumes(items: Sequence[Mapping[str, Any]]) -> list[base.VolumeAttachment]:
    return [base.VolumeAttachment(**dict(v)) for v in items]


class TwinService:
    """``driver`` served on ``host:port`` (0: a free port) to holders of ``token``; ``close()`` stops it."""

    def __init__(self, driver: SimDriver, token: str, host: str = "127.0.0.1", port: int = 0) -> None:
        if len(token) < 16:
            raise errors.InvalidInputError("the twin's driver token must have at least 16 characters")
        self.driver = driver
        self.token = token
        self._lock = threading.Lock()  # one driver call at a time: the ledger sees each execution once
        self.ledger: dict[str, dict[str, Any]] = {}
        self._calls: dict[str, Callable[[dict[str, Any]], Any]] = self._table()
        service = self

        class Handler(_Handler):
            owner = service

        try:
            self.httpd = ThreadingHTTPServer((host, port), Handler)
        except OSError as exc:
            raise errors.InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
        self.httpd.daemon_threads = True
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="twin-driver", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _table(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        d = self.driver
        return {
            "list_nodes": lambda a: d.list_nodes(),
            "node_types": lambda a: {h: n.node_type for h, n in d.region.nodes.items()},
            "operation": lambda a: d.operation(a["request_id"]),
            "inspect": lambda a: d.inspect(a["node"], request_id=a["request_id"]),
            "power": lambda a: d.power(a["node"], bool(a["on"]), request_id=a["request_id"]),
            "provision": lambda a: d.provision(
                a["node"], image=a["image"], firmware=a["firmware"], request_id=a["request_id"]
            ),
            "attach_networks": lambda a: d.attach_networks(
                a["node"], base.NetworkAttachment(**a["networks"]), request_id=a["request_id"]
            ),
            "detach_networks": lambda a: d.detach_networks(a["node"], request_id=a["request_id"]),
            "attach_storage": lambda a: d.attach_storage(a["node"], _volumes(a["volumes"]), request_id=a["request_id"]),
            "run_acceptance": lambda a: d.run_acceptance(a["node"], request_id=a["request_id"], tests=a["tests"]),
            "run_cluster_tests": lambda a: d.run_cluster_tests(
                a["nodes"],
                request_id=a["request_id"],
                tests=a["tests"],
                volumes=_volumes(a["volumes"]),
                storage_network_gb_s=a["storage_network_gb_s"],
            ),
            "reset_gpu": lambda a: d.reset_gpu(a["node"], int(a["gpu"]), request_id=a["request_id"]),
            "reboot": lambda a: d.reboot(a["node"], request_id=a["request_id"]),
            "sanitize": lambda a: d.sanitize(a["node"], request_id=a["request_id"]),
            "sanitize_volume": lambda a: d.sanitize_volume(a["volume_id"], a["tier"], float(a["size_tb"])),
            "write_object": lambda a: d.write_object(
                a["volume_id"], a["name"], base64.b64decode(a["data"]), base64.b64decode(a["data_key"])
            ),
            "read_object": lambda a: _b64(d.read_object(a["volume_id"], a["name"], base64.b64decode(a["data_key"]))),
            "object_names": lambda a: d.object_names(a["volume_id"]),
        }

    def call(self, method: str, args: dict[str, Any], replica: str) -> Any:
        """Run ``method`` on the driver; returns JSON-ready data (an ``Operation`` as its dict)."""
        fn = self._calls.get(method)
        if fn is None:
            raise errors.NotFoundError(kind="driver method", name=method)
        with self._lock:
            before = self.driver.calls
            out = fn(args)
            if isinstance(out, base.Operation):
                self._record(out, replica, executed=self.driver.calls > before, submitted=method != "operation")
                return out.to_dict()
            return out

    def _record(self, op: base.Operation, replica: str, *, executed: bool, submitted: bool) -> None:
        entry = self.ledger.setdefault(
            op.request_id,
            {"request_id": op.request_id, "kind": op.kind, "node": op.node, "executions": 0, "submitters": []},
        )
        if executed:
            entry["executions"] += 1
        if submitted and replica not in entry["submitters"]:
            entry["submitters"].append(replica)


class _Handler(BaseHTTPRequestHandler):
    owner: TwinService

    def _authorized(self) -> bool:
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self.owner.token}".encode())

    def do_GET(self) -> None:  # http.server naming
        if not self._authorized():
            return self._send(401, {"code": "unauthenticated", "message": "a bearer token is required"})
        if self.path == "/v1/driver/ledger":
            with self.owner._lock:
                return self._send(200, {"items": list(self.owner.ledger.values())})
        self._send(404, {"code": "not_found", "message": "POST /v1/driver/<method>; GET /v1/driver/ledger"})

    def do_POST(self) -> None:
        if not self._authorized():
            return self._send(401, {"code": "unauthenticated", "message": "a bearer token is required"})
        length = int(self.headers.get("Content-Length") or 0)
        if not self.path.startswith("/v1/driver/") or not 0 <= length <= MAX_BODY_BYTES:
            return self._send(400, {"code": "invalid_input", "message": f"a JSON body of at most {MAX_BODY_BYTES} B"})
        try:
            args = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(args, dict):
                raise ValueError("not an object")
            replica = str(self.headers.get(REPLICA_HEADER, "?"))[:128]
            out = self.owner.call(self.path[len("/v1/driver/") :], args, replica)
        except errors.VelyrixError as exc:
            return self._send(exc.http_status if exc.http_status < 500 else 422, exc.to_dict())
        except (ValueError, KeyError, TypeError) as exc:
            return self._send(400, {"code": "invalid_input", "message": f"bad arguments: {exc!r}"[:300]})
        self._send(200, {"value": out})

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # http.server naming; keep calls out of the log
        log.debug(format, *args)


class TwinClient(base.Driver):
    """A ``Driver`` on a twin served by ``TwinService`` at ``url``; ``replica`` names this caller in its ledger."""

    name = "sim-remote"
    firmware_image = staticmethod(SimDriver.firmware_image)

    def __init__(self, url: str, token: str, replica: str, timeout_s: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url,
            timeout=timeout_s,
            headers={"Authorization": f"Bearer {token}", REPLICA_HEADER: replica},
        )

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, **args: Any) -> Any:
        try:
            resp = self._http.post(f"/v1/driver/{method}", json=args)
        except httpx.TransportError as exc:
            raise errors.RemoteError(
                f"the twin at {self.url} did not answer: {exc.__class__.__name__}", code="twin_unreachable", status=503
            ) from exc
        body = resp.json()
        if resp.status_code == 404 and body.get("code") == "not_found":
            raise errors.NotFoundError(body.get("message"))
        if resp.status_code != 200:  # the twin's own error (``unknown_name``, ``invalid_input``...) and status
            message = str(body.get("message", resp.text))[:300]
            raise errors.RemoteError(message, code=str(body.get("code", "?")), status=resp.status_code)
        return body["value"]

    def ledger(self) -> list[dict[str, Any]]:
        """Every request the twin executed (see the module doc)."""
        resp = self._http.get("/v1/driver/ledger")
        resp.raise_for_status()
        items: list[dict[str, Any]] = resp.json()["items"]
        return items

    def node_types(self) -> dict[str, str]:
        """``{hostname: node type}`` of the twin's nodes (enrollment needs them)."""
        out: dict[str, str] = self._call("node_types")
        return out

    def list_nodes(self) -> list[str]:
        out: list[str] = self._call("list_nodes")
        return out

    def operation(self, request_id: str) -> base.Operation:
        return _op(self._call("operation", request_id=request_id))

    def inspect(self, node: str, *, request_id: str) -> base.Operation:
        return _op(self._call("inspect", node=node, request_id=request_id))

    def power(self, node: str, on: bool, *, request_id: str) -> base.Operation:
        return _op(self._call("power", node=node, on=on, request_id=request_id))

    def provision(self, node: str, *, image: str, firmware: Mapping[str, str], request_id: str) -> base.Operation:
        return _op(self._call("provision", node=node, image=image, firmware=dict(firmware), request_id=request_id))

    def attach_networks(self, node: str, networks: base.NetworkAttachment, *, request_id: str) -> base.Operation:
        return _op(self._call("attach_networks", node=node, networks=asdict(networks), request_id=request_id))

    def detach_networks(self, node: str, *, request_id: str) -> base.Operation:
        return _op(self._call("detach_networks", node=node, request_id=request_id))

    def attach_storage(self, node: str, volumes: Sequence[base.VolumeAttachment], *, request_id: str) -> base.Operation:
        vols = [asdict(v) for v in volumes]
        return _op(self._call("attach_storage", node=node, volumes=vols, request_id=request_id))

    def run_acceptance(self, node: str, *, request_id: str, tests: Sequence[str] = ()) -> base.Operation:
        return _op(self._call("run_acceptance", node=node, request_id=request_id, tests=list(tests)))

    def run_cluster_tests(
        self,
        nodes: Sequence[str],
        *,
        request_id: str,
        tests: Sequence[str] = (),
        volumes: Sequence[base.VolumeAttachment] = (),
        storage_network_gb_s: float | None = None,
    ) -> base.Operation:
        return _op(
            self._call(
                "run_cluster_tests",
                nodes=list(nodes),
                request_id=request_id,
                tests=list(tests),
                volumes=[asdict(v) for v in volumes],
                storage_network_gb_s=storage_network_gb_s,
            )
        )

    def reset_gpu(self, node: str, gpu: int, *, request_id: str) -> base.Operation:
        return _op(self._call("reset_gpu", node=node, gpu=gpu, request_id=request_id))

    def reboot(self, node: str, *, request_id: str) -> base.Operation:
        return _op(self._call("reboot", node=node, request_id=request_id))

    def sanitize(self, node: str, *, request_id: str) -> base.Operation:
        return _op(self._call("sanitize", node=node, request_id=request_id))

    def sanitize_volume(self, volume_id: str, tier: str, size_tb: float) -> dict[str, Any]:
        out: dict[str, Any] = self._call("sanitize_volume", volume_id=volume_id, tier=tier, size_tb=size_tb)
        return out

    def write_object(self, volume_id: str, name: str, data: bytes, data_key: bytes) -> dict[str, Any]:
        out: dict[str, Any] = self._call(
            "write_object", volume_id=volume_id, name=name, data=_b64(data), data_key=_b64(data_key)
        )
        return out

    def read_object(self, volume_id: str, name: str, data_key: bytes) -> bytes:
        return base64.b64decode(self._call("read_object", volume_id=volume_id, name=name, data_key=_b64(data_key)))

    def object_names(self, volume_id: str) -> list[str]:
        out: list[str] = self._call("object_names", volume_id=volume_id)
        return out
