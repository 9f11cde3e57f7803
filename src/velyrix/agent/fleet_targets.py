"""A twin region scraped like real agents: one Prometheus target per node, listed by HTTP service discovery.

``velyrix sim exporter --per-node`` serves, on one port:

- ``/sd``: the Prometheus HTTP SD document (``http_sd_configs``), one target group per node whose
  ``__metrics_path__`` is that node's path, with the labels ``Hostname``, ``node_type`` and ``su``;
- ``/nodes/<hostname>/metrics``: the exposition of that node alone (what its agent would serve, some
  400 series for an 8-GPU node), read from the twin without advancing it,
  its flow counters on the wall clock (``velyrix.agent.wall_rates``);
- ``/metrics``: 404 with a pointer to ``/sd`` (a whole 10,000-node region in one scrape is what this
  replaces).

A scrape never renders and never takes a region lock: it serves the bytes of that node's last rendering.
One worker thread advances the region every ``advance_every_s`` wall seconds and renders every node in turn,
paced so that a round over the region takes ``refresh_s`` (default: ``advance_every_s``, or
``ROUND_S_PER_NODE`` per node when that is longer, so the worker stays near a third of a core), the first round as
fast as it can (``warm`` is set when it ends; a node scraped before its first rendering is rendered on
demand). A node's exposition is thus at most about ``refresh_s`` old, as a real exporter's collection interval
makes it (set ``refresh_s`` to the scrape interval to render each node once per scrape, what rendering on
request cost). ``/sd`` is built once (nodes do not come and go in a twin).
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
import time
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
ROUND_S_PER_NODE = 0.006
"""Default wall seconds of a rendering round per node: one node renders in about 2 ms (docs/benchmarks.md,
"Fleet exporter"), so the worker renders about a third of the time (10,000 nodes: a round a minute)."""
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
        refresh_s: float | None = None,
    ):
        self.region = region
        self.job_map_root = job_map_root
        self.ib_metrics = ib_metrics
        self.advance_every_s = advance_every_s
        default_s = max(advance_every_s, len(region.nodes) * ROUND_S_PER_NODE)
        self.refresh_s = default_s if refresh_s is None else refresh_s
        self.stop = threading.Event()
        self.warm = threading.Event()
        """Set once every node has been rendered (the first round)."""
        self.last_round_s: float | None = None
        """Wall seconds the last full round of renderings took (``refresh_s`` unless rendering falls behind)."""
        self._sd: bytes | None = None
        self._rendered: dict[str, bytes] = {}
        self.wall_counters = wall_rates.WallClockCounters()
        self._render_lock = threading.Lock()  # the wall counters keep per-node state: one rendering at a time
        self._worker = threading.Thread(target=self._work, name="twin-render", daemon=True)

    def start(self) -> None:
        self._worker.start()

    def _work(self) -> None:
        next_advance = time.monotonic() + self.advance_every_s
        paced = False
        while not self.stop.is_set():
            hosts = list(self.region.nodes)
            started = time.monotonic()
            slot_s = self.refresh_s / max(len(hosts), 1) if paced else 0.0
            for i, host in enumerate(hosts):
                if time.monotonic() >= next_advance:
                    self._advance()
                    next_advance = time.monotonic() + self.advance_every_s
                self._refresh(host)
                wait_s = started + (i + 1) * slot_s - time.monotonic()
                if wait_s > 0 and self.stop.wait(wait_s):
                    return
            self.last_round_s = time.monotonic() - started
            self.warm.set()
            paced = True
            if not hosts and self.stop.wait(self.advance_every_s):
                return

    def _advance(self) -> None:
        try:
            catch_up(self.region)
        except Exception:  # the twin must keep serving; the next tick tries again
            log.exception("advancing the twin failed")

    def _refresh(self, host: str) -> None:
        try:
            body = self.render_node(host)
        except Exception:  # one node's failure must not stop the others' refresh
            log.exception("rendering %s failed", host)
            return
        if body is not None:  # kept gzipped: ~10x smaller (10,000 nodes: ~60 MB, not ~600 MB), sent as is
            self._rendered[host] = gzip.compress(body, compresslevel=1, mtime=0)

    def exposition(self, host: str) -> bytes | None:
        """What a scrape of ``host`` gets, gzipped: its last rendering (rendered now only before its first
        one); ``None`` for a hostname the region does not have."""
        body = self._rendered.get(host)
        if body is None and host in self.region.nodes:
            self._refresh(host)
            body = self._rendered.get(host)
        return body

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
        with self._render_lock:
            sample = self.wall_counters.present(raw, wall_s)
        mapping = jobs.read_job_map(self.job_map_root / host) if self.job_map_root else jobs.JobMap()
        return exporter.render([(sample, mapping)], self.ib_metrics)


class _Handler(BaseHTTPRequestHandler):
    targets: FleetTargets  # set on the subclass made by FleetServer
    address: str

    def do_GET(self) -> None:  # http.server naming
        path = self.path.split("?", 1)[0]
        body: bytes | None
        status, ctype, encoding = 200, "text/plain", ""
        if path == "/sd":
            body, ctype = self.targets.sd_document(self.address), "application/json"
        elif path.startswith(PREFIX) and path.endswith(SUFFIX):
            body, ctype = self.targets.exposition(path[len(PREFIX) : -len(SUFFIX)]), CONTENT_TYPE
            if body is None:
                body, status, ctype = b"no such node; see /sd\n", 404, "text/plain"
            elif "gzip" in self.headers.get("Accept-Encoding", ""):
                encoding = "gzip"  # Prometheus asks for it
            else:
                body = gzip.decompress(body)
        elif path in ("/", "/healthz"):
            body = b"velyrix sim exporter: per-node targets at /sd\n"
        else:
            body, status = b"not found; targets are listed at /sd (Prometheus http_sd_configs)\n", 404
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            if encoding:
                self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the scraper gave up (its scrape_timeout)
            log.debug("scrape of %s abandoned by the client", path)

    def log_message(self, format: str, *args: object) -> None:  # keep scrapes out of the log
        log.debug(format, *args)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:  # socketserver naming
        # a scraper that gave up mid-request (its scrape_timeout) is not worth a traceback on stderr
        log.debug("request from %s failed", client_address, exc_info=True)


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
            self.httpd = _Server((host, port), _Handler)
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
