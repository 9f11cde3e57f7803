"""A twin region scraped like real agents: one Prometheus target per node, listed by HTTP service discovery.

``velyrix sim exporter --per-node`` serves, on one port:

- ``/sd``: the Prometheus HTTP SD document (``http_sd_configs``), one target group per node whose
  ``__metrics_path__`` is that node's path, with the labels ``Hostname``, ``node_type`` and ``su``;
- ``/nodes/<hostname>/metrics``: the exposition of that node alone (what its agent would serve, some
  400 series for an 8-GPU node), read from the twin without advancing it,
  its flow counters on the wall clock (``velyrix.agent.wall_rates``);
- ``/metrics``: 404 with a pointer to ``/sd`` (a whole 10,000-node region in one scrape is what this
  replaces).

The region advances in a background thread every ``advance_every_s`` wall seconds, so a scrape costs one
node's rendering however big the region is. ``/sd`` is built once (nodes do not come and go in a twin).
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from velyrix import errors
from velyrix.agent import exporter, jobs, wall_rates
from velyrix.agent.collectors.sim import catch_up, read_node, region_lock
from velyrix.agent.service import CONTENT_TYPE

if TYPE_CHECKING:
    from velyrix.fleet.drivers.sim import SimRegion

log = logging.getLogger("velyrix.agent")
PREFIX = "/nodes/"
SUFFIX = "/metrics"


class FleetTargets:
    """Per-node expositions of ``region`` and the HTTP SD document listing them (see the module doc)."""

    def __init__(
        self,
        region: SimRegion,
        *,
        job_map_root: Path | None = None,
        ib_metrics: str = "velyrix",
        advance_every_s: float = 1.0,
    ):
        self.region = region
        self.job_map_root = job_map_root
        self.ib_metrics = ib_metrics
        self.advance_every_s = advance_every_s
        self.stop = threading.Event()
        self._sd: bytes | None = None
        self.wall_counters = wall_rates.WallClockCounters()
        self._advancer = threading.Thread(target=self._advance_loop, name="twin-advance", daemon=True)

    def start(self) -> None:
        self._advancer.start()

    def _advance_loop(self) -> None:
        while not self.stop.wait(self.advance_every_s):
            try:
                catch_up(self.region)
            except Exception:  # the twin must keep serving; the next tick tries again
                log.exception("advancing the twin failed")

    def sd_document(self, address: str) -> bytes:
        """Prometheus HTTP SD JSON: one target group per node at ``address`` (``host:port``)."""
        if self._sd is None:
            groups: list[dict[str, Any]] = []
            for host, node in self.region.nodes.items():
                labels = {"__metrics_path__": f"{PREFIX}{host}{SUFFIX}", "Hostname": host, "node_type": node.node_type}
                if node.position is not None:
                    labels["su"] = str(node.position.su)
                groups.append({"targets": [address], "labels": labels})
            self._sd = json.dumps(groups).encode()
        return self._sd

    def render_node(self, host: str) -> bytes | None:
        """One node's exposition (``None`` for a hostname the region does not have)."""
        node = self.region.nodes.get(host)
        if node is None:
            return None
        with region_lock(self.region), self.region.lock:  # counters and the time they stand at, together
            sim_s, wall_s = self.region.advanced_at()
            raw = read_node(node, sim_s)
        sample = self.wall_counters.present(raw, wall_s)
        mapping = jobs.read_job_map(self.job_map_root / host) if self.job_map_root else jobs.JobMap()
        return exporter.render([(sample, mapping)], self.ib_metrics)


class _Handler(BaseHTTPRequestHandler):
    targets: FleetTargets  # set on the subclass made by FleetServer
    address: str

    def do_GET(self) -> None:  # http.server naming
        path = self.path.split("?", 1)[0]
        body: bytes | None
        status, ctype = 200, "text/plain"
        if path == "/sd":
            body, ctype = self.targets.sd_document(self.address), "application/json"
        elif path.startswith(PREFIX) and path.endswith(SUFFIX):
            body, ctype = self.targets.render_node(path[len(PREFIX) : -len(SUFFIX)]), CONTENT_TYPE
            if body is None:
                body, status, ctype = b"no such node; see /sd\n", 404, "text/plain"
        elif path in ("/", "/healthz"):
            body = b"velyrix sim exporter: per-node targets at /sd\n"
        else:
            body, status = b"not found; targets are listed at /sd (Prometheus http_sd_configs)\n", 404
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the scraper gave up (its scrape_timeout)
            log.debug("scrape of %s abandoned by the client", path)

    def log_message(self, format: str, *args: object) -> None:  # keep scrapes out of the log
        log.debug(format, *args)


class FleetServer:
    """``FleetTargets`` served on ``host:port`` (0 = a free port); ``close()`` stops server and advancer."""

    def __init__(
        self,
        targets: FleetTargets,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        hint: str = "choose another --port (0 picks a free one)",
    ):
        """``hint``: what the error says to do when ``port`` is taken."""
        try:
            self.httpd = ThreadingHTTPServer((host, port), _Handler)
        except OSError as exc:
            raise errors.InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror}", hint=hint) from exc
        self.httpd.daemon_threads = True
        self.httpd.request_queue_size = 1024  # Prometheus opens many scrapes at once
        self.host, self.port = host, int(self.httpd.server_address[1])
        self.httpd.RequestHandlerClass = type(
            "Handler", (_Handler,), {"targets": targets, "address": f"{host}:{self.port}"}
        )
        self.targets = targets
        targets.start()
        self.thread = threading.Thread(target=self.httpd.serve_forever, name=f"fleet:{self.port}", daemon=True)
        self.thread.start()

    @property
    def sd_url(self) -> str:
        return f"http://{self.host}:{self.port}/sd"

    def close(self) -> None:
        self.targets.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
