"""A twin region scraped like real agents: one Prometheus target per node, listed by HTTP service discovery.

``velyrix sim exporter --per-node`` serves, on one port:

- ``/sd``: the Prometheus HTTP SD document (``http_sd_configs``), one target group per node whose
  ``__metrics_path__`` is that node's path, with the labels ``Hostname``, ``node_type`` and ``su``;
- ``/nodes/<hostname>/metrics``: the exposition of that node alone (what its agent would serve, some
  400 series for an 8-GPU node), read from the twin without advancing it,
  its flow counters on the wall clock (``velyrix.agent.wall_rates``);
- ``/metrics``: 404 with a pointer to ``/sd`` (a whole 10,000-node region in one scrape is what this
  replaces).

A scrape never renders and never takes a region lock: it is sent the bytes of that node's last rendering,
kept as a whole gzipped HTTP response, by ``velyrix.agent.fleet_http``'s keep-alive HTTP/1.1 server (Prometheus
keeps its connections open between scrapes, so 10,000 targets cost no connection set-up, and a scrape is
a parse, a dictionary lookup and a write).
One worker thread advances the region every ``advance_every_s`` wall seconds and renders every node in turn,
paced so that a round over the region takes ``refresh_s`` (default: ``advance_every_s``, or
``ROUND_S_PER_NODE`` per node when that is longer, so the worker stays near a third of a core), the first round as
fast as it can (``warm`` is set when it ends; a node scraped before its first rendering is rendered on
demand). A node's exposition is thus at most about ``refresh_s`` old, as a real exporter's collection interval
makes it (set ``refresh_s`` to the scrape interval to render each node once per scrape, what rendering on
request cost). ``/sd`` is built once (nodes do not come and go in a twin).

When the first round ends, every object alive then (the twin: ~1.2 million at 10,000 nodes) is frozen out of
the garbage collector's full collections (``gc.freeze``): a full collection holds the interpreter lock,
serving included, while it walks them, 0.4-0.8 s at 2,500 nodes on the loaded 2-core VM (docs/benchmarks.md).
"""

from __future__ import annotations

import gc
import gzip
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from velyrix.agent import exporter, fleet_http, jobs, wall_rates
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
        self.renderings = 0
        """Node renderings the worker has done so far (those on demand before the first round ends apart)."""
        self.render_cpu_s = 0.0
        """CPU seconds the worker spent rendering (gzip included), and advancing the twin (``advance_cpu_s``)."""
        self.advance_cpu_s = 0.0
        self._sd: fleet_http.Reply | None = None
        self._responses: dict[bytes, bytes] = {}
        """Request path (``/nodes/<host>/metrics``) -> the whole HTTP response of that node's last rendering,
        gzipped and kept alive: what a scrape is sent (``fleet_http``'s fast path is this dict's ``get``)."""
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
                cpu_s = time.thread_time()
                if time.monotonic() >= next_advance:
                    self._advance()
                    next_advance = time.monotonic() + self.advance_every_s
                    self.advance_cpu_s += time.thread_time() - cpu_s
                    cpu_s = time.thread_time()
                self._refresh(host)
                self.render_cpu_s += time.thread_time() - cpu_s
                self.renderings += 1
                wait_s = started + (i + 1) * slot_s - time.monotonic()
                if wait_s > 0 and self.stop.wait(wait_s):
                    return
            self.last_round_s = time.monotonic() - started
            if not self.warm.is_set():
                gc.freeze()  # the twin and what the first round built live as long as the exporter (module doc)
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
        if body is not None:  # kept gzipped: ~20x smaller (10,000 nodes: ~50 MB, not ~1 GB), sent as is
            reply = fleet_http.Reply(200, gzip.compress(body, compresslevel=1, mtime=0), CONTENT_TYPE, True)
            self._responses[f"{PREFIX}{host}{SUFFIX}".encode()] = fleet_http.response_bytes(reply)

    def cached(self, path: bytes) -> bytes | None:
        """The whole HTTP response (gzipped, kept alive) of the node at request path ``path``, if rendered."""
        return self._responses.get(path)

    def exposition(self, host: str) -> bytes | None:
        """What a scrape of ``host`` gets, gzipped: its last rendering (rendered now only before its first
        one, taking the region's locks); ``None`` for a hostname the region does not have."""
        path = f"{PREFIX}{host}{SUFFIX}".encode()
        if path not in self._responses and host in self.region.nodes:
            self._refresh(host)
        response = self._responses.get(path)
        return None if response is None else response[response.index(b"\r\n\r\n") + 4 :]

    def sd_document(self, address: str, count: int | None = None) -> bytes:
        """Prometheus HTTP SD JSON: one target group per node at ``address`` (``host:port``); the first
        ``count`` nodes only when given (nodes joining the fleet in turn)."""
        groups: list[dict[str, Any]] = []
        for host, node in list(self.region.nodes.items())[:count]:
            labels = {"__metrics_path__": f"{PREFIX}{host}{SUFFIX}", "Hostname": host, "node_type": node.node_type}
            if node.position is not None:
                labels["su"] = str(node.position.su)
            groups.append({"targets": [address], "labels": labels})
        return json.dumps(groups).encode()

    def listen_at(self, address: str, count: int | None = None) -> None:
        """Build the ``/sd`` reply for targets at ``address`` (``host:port``), listing the first ``count`` nodes
        when given; built once, since nodes do not come and go in a twin (call again to list more)."""
        document = self.sd_document(address, count)
        self._sd = fleet_http.Reply(200, gzip.compress(document, mtime=0), "application/json", True)

    def handle(self, path: str, accepts_gzip: bool) -> fleet_http.Reply | Callable[[], fleet_http.Reply]:
        """Every request but a scrape of a rendered node (``fleet_http``'s handler): ``/sd``, a node (a
        function rendering it first when it has no rendering yet), the index, 404 for anything else."""
        if path == "/sd" and self._sd is not None:
            return self._sd
        if path.startswith(PREFIX) and path.endswith(SUFFIX):
            host = path[len(PREFIX) : -len(SUFFIX)]
            if host not in self.region.nodes:
                return fleet_http.Reply(404, b"no such node; see /sd\n")
            response = self._responses.get(path.encode())
            if response is None:
                return lambda: self._node_reply(host)
            return fleet_http.Reply(200, response[response.index(b"\r\n\r\n") + 4 :], CONTENT_TYPE, True)
        if path in ("/", "/healthz"):
            return fleet_http.Reply(200, b"velyrix sim exporter: per-node targets at /sd\n")
        return fleet_http.Reply(404, b"not found; targets are listed at /sd (Prometheus http_sd_configs)\n")

    def _node_reply(self, host: str) -> fleet_http.Reply:
        body = self.exposition(host)
        if body is None:
            return fleet_http.Reply(500, b"rendering the node failed; see the exporter's log\n")
        return fleet_http.Reply(200, body, CONTENT_TYPE, True)

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


class FleetServer:
    """``FleetTargets`` served on ``host:port`` (0 = a free port) by ``fleet_http.KeepAliveServer``;
    ``close()`` stops server and worker."""

    def __init__(
        self,
        targets: FleetTargets,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        hint: str = "choose another --port (0 picks a free one)",
    ):
        """``hint``: what the error says to do when ``port`` is taken."""
        self.http = fleet_http.KeepAliveServer(targets.handle, targets.cached, host, port, hint=hint, name="fleet")
        self.host, self.port = host, self.http.port
        self.thread = self.http.thread
        self.targets = targets
        targets.listen_at(f"{host}:{self.port}")
        targets.start()
        self.http.start()

    @property
    def sd_url(self) -> str:
        return f"http://{self.host}:{self.port}/sd"

    def close(self) -> None:
        self.targets.stop.set()
        self.http.close()
