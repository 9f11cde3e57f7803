"""One twin node's BMC as the jump host relays it (``bmc NODE``, ``testing/twin_jump.py``).

The twin's Redfish service (``ops/redfish_twin.py``) answers for every node with one login, as a BMC
network does; a tenant's root certificate must reach its own node's BMC only. ``BmcView`` is a loopback
HTTP server per node that forwards the service root and ``/redfish/v1/Systems/<node>`` (and below) to
the service with the node's stored BMC credential (``controlplane/bmc_credentials.py``, unsealed per
request), and answers 403 for anything else (other nodes' systems, the collections that list them,
accounts and sessions). The jump host's certificate check (root, self-operated, audited) is the login.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from velyrix.fleet.drivers.redfish import BmcEndpoint

MAX_BODY_BYTES = 1 << 20
"""The largest request body forwarded (Redfish actions are small JSON documents)."""


def allowed(path: str, system_id: str) -> bool:
    """Whether ``path`` (without the query) is the service root or ``system_id``'s own subtree."""
    clean = path.split("?", 1)[0].rstrip("/")
    own = f"/redfish/v1/Systems/{system_id}"
    return clean in ("/redfish", "/redfish/v1") or clean == own or clean.startswith(own + "/")


class BmcView:
    """``start()`` serves the node's view on a free loopback port (``port``); ``close()`` stops it."""

    def __init__(self, endpoint: Any) -> None:
        self.endpoint_of = endpoint
        """A callable returning the node's ``BmcEndpoint`` (read per request: the password is unsealed then)."""
        self.server: ThreadingHTTPServer | None = None
        self.port = 0

    def start(self) -> BmcView:
        view = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _forward(self) -> None:
                endpoint: BmcEndpoint = view.endpoint_of()
                if not allowed(self.path, endpoint.system_id):
                    self._answer(403, {"error": f"this BMC view shows {endpoint.system_id} only"})
                    return
                length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY_BYTES)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "accept", "if-match")}
                resp = httpx.request(
                    self.command,
                    endpoint.address + self.path,
                    content=body,
                    headers=headers,
                    auth=(endpoint.username, endpoint.password.reveal()),
                    timeout=30.0,
                )
                self.send_response(resp.status_code)
                for name in ("Content-Type", "ETag", "Location"):
                    if name in resp.headers:
                        self.send_header(name, resp.headers[name])
                self.send_header("Content-Length", str(len(resp.content)))
                self.end_headers()
                self.wfile.write(resp.content)

            def _answer(self, code: int, doc: dict[str, str]) -> None:
                data = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, name="velyrix-bmc-view", daemon=True).start()
        return self

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
