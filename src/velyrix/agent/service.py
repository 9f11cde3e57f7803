"""The agent at run time: collect, serve ``/metrics`` over HTTP, report to the control plane.

``MetricsSource`` holds one or more nodes (one for an agent on a node, thousands for the twin's fleet
exporter), each a collector plus its job-mapping directory. A scrape collects (reusing a sample younger
than ``min_interval_s``), reads the job mappings afresh (so a prolog's label shows on the next scrape)
and renders. ``serve()`` runs a threaded HTTP server; ``AgentService`` adds the reporting loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from velyrix import errors
from velyrix.agent import exporter, jobs, wall_rates
from velyrix.agent.collectors.base import Collector, NodeSample

log = logging.getLogger("velyrix.agent")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass
class NodeSource:
    """One node the process exports: its collector and where its job mapping comes from: the directory
    the scheduler's prolog writes, or ``job_source`` (e.g. ``velyrix.agent.k8s.PodLabelSource``)."""

    collector: Collector
    job_map_dir: Path | None = None
    job_source: Callable[[NodeSample], jobs.JobMap] | None = None

    def job_map(self, sample: NodeSample, max_jobs_per_gpu: int) -> jobs.JobMap:
        """The mapping for ``sample``, read now."""
        if self.job_source is not None:
            return self.job_source(sample)
        return jobs.read_job_map(self.job_map_dir, max_jobs_per_gpu)


class MetricsSource:
    """Snapshots of a set of nodes for the exporter. Thread-safe: scrapes may overlap."""

    def __init__(
        self,
        nodes: list[NodeSource],
        *,
        min_interval_s: float = 0.0,
        max_jobs_per_gpu: int = 4,
        before_collect: list[Callable[[], None]] | None = None,
        after_collect: Sequence[Callable[[NodeSample], object]] | None = None,
        ib_metrics: str = "velyrix",
    ):
        """``before_collect`` hooks run once before each collection (e.g. advancing the twin);
        ``after_collect`` hooks see each fresh sample (e.g. ``stamp_health``)."""
        self.nodes = nodes
        self.min_interval_s = min_interval_s
        self.max_jobs_per_gpu = max_jobs_per_gpu
        self.before_collect = before_collect or []
        self.after_collect = list(after_collect or [])
        self.ib_metrics = ib_metrics
        """InfiniBand metric names: ``velyrix``, ``node_exporter`` or ``off`` (agent/ib_names.py)."""
        self._lock = threading.Lock()
        self._samples: list[NodeSample] = []
        self._shown: list[NodeSample] = []
        self._at = 0.0
        self.wall_counters = wall_rates.WallClockCounters()
        """Flow counters of twin-clock collectors, shown on the wall clock (``velyrix.agent.wall_rates``)."""

    def samples(self) -> list[NodeSample]:
        """Latest samples of every node as collected (collected now unless younger than ``min_interval_s``),
        each with the jobs of its mapping read now (``NodeSample.jobs``): what is reported to the control plane."""
        out = self._collect()[0]
        for sample, node in zip(out, self.nodes, strict=True):
            if sample.up:
                sample.jobs = node.job_map(sample, self.max_jobs_per_gpu).report()
        return out

    def _collect(self) -> tuple[list[NodeSample], list[NodeSample]]:
        """The latest samples, and the same as the exposition shows them (twin-clock collectors' flow
        counters on the wall clock)."""
        with self._lock:
            now = time.monotonic()
            if not self._samples or now - self._at >= self.min_interval_s:
                for hook in self.before_collect:
                    hook()
                out = []
                for node in self.nodes:
                    try:
                        out.append(node.collector.collect())
                    except errors.VelyrixError as exc:
                        name = getattr(node.collector, "hostname", node.collector.name)
                        out.append(NodeSample(hostname=str(name), up=False, problems=[exc.message]))
                wall_s = time.time()
                for sample in out:
                    for after in self.after_collect:
                        after(sample)
                shown = [
                    self.wall_counters.present(s, wall_s) if n.collector.twin_clock else s
                    for s, n in zip(out, self.nodes, strict=True)
                ]
                self._samples, self._shown, self._at = out, shown, now
            return self._samples, self._shown

    def snapshot(self) -> exporter.Snapshot:
        """Samples as the exposition shows them, paired with the job mapping read now."""
        shown = self._collect()[1]
        return [(s, n.job_map(s, self.max_jobs_per_gpu)) for s, n in zip(shown, self.nodes, strict=True)]

    def render(self) -> bytes:
        """The ``/metrics`` body."""
        return exporter.render(self.snapshot(), self.ib_metrics)


def stamp_health(latest: Callable[[], object | None]) -> Callable[[NodeSample], None]:
    """An ``after_collect`` hook writing the latest health verdict (``velyrix.health.engine.Verdict``, from
    ``latest()``) on samples of its node: ``health_level``, ``health_action``, ``health_summary``
    and the whole verdict (``health_verdict``)."""

    def stamp(sample: NodeSample) -> None:
        verdict = latest()
        if verdict is None or not sample.up or getattr(verdict, "node", None) != sample.hostname:
            return
        sample.health_level = int(verdict.level)  # type: ignore[attr-defined]
        sample.health_action = int(verdict.action)  # type: ignore[attr-defined]
        sample.health_summary = verdict.summary()  # type: ignore[attr-defined]
        sample.health_verdict = verdict.to_dict()  # type: ignore[attr-defined]

    return stamp


class _Handler(BaseHTTPRequestHandler):
    source: MetricsSource  # set on the subclass made by serve()

    def do_GET(self) -> None:  # http.server naming
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            try:
                body, status, ctype = self.source.render(), 200, CONTENT_TYPE
            except Exception as exc:  # a scrape must get an answer, not a dropped socket
                log.exception("render failed")
                body, status, ctype = f"collection failed: {exc}\n".encode(), 500, "text/plain"
        elif path in ("/", "/healthz"):
            body, status, ctype = b"velyrix agent: metrics at /metrics\n", 200, "text/plain"
        else:
            body, status, ctype = b"not found; try /metrics\n", 404, "text/plain"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # keep scrapes out of the log
        log.debug(format, *args)


class MetricsServer:
    """A running ``/metrics`` endpoint (``port`` is the bound port; ``close()`` stops it)."""

    def __init__(self, source: MetricsSource, host: str = "127.0.0.1", port: int = 0):
        handler = type("Handler", (_Handler,), {"source": source})
        self.httpd = ThreadingHTTPServer((host, port), handler)
        self.httpd.daemon_threads = True
        self.host = host
        self.port = int(self.httpd.server_address[1])
        self.thread = threading.Thread(target=self.httpd.serve_forever, name=f"metrics:{self.port}", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def serve(source: MetricsSource, host: str = "127.0.0.1", port: int = 0) -> MetricsServer:
    """Start serving ``source`` on ``host:port`` (0 = a free port) in a background thread."""
    try:
        return MetricsServer(source, host, port)
    except OSError as exc:
        raise errors.InvalidInputError(
            f"cannot listen on {host}:{port}: {exc.strerror}", hint="choose another --port (0 picks a free one)"
        ) from exc


class AgentService:
    """Serve metrics and, when a reporter is given, send each node's sample every ``report_interval_s``."""

    def __init__(
        self,
        source: MetricsSource,
        server: MetricsServer,
        reporter: object | None = None,
        report_interval_s: float = 30.0,
    ):
        self.source = source
        self.server = server
        self.reporter = reporter
        self.report_interval_s = report_interval_s
        self.stop = threading.Event()
        self.reports_sent = 0
        self.last_error: str | None = None

    def report_once(self) -> None:
        """Send the current sample of every node; failures are logged and kept in ``last_error``."""
        if self.reporter is None:
            return
        for sample in self.source.samples():
            try:
                self.reporter.report(sample)  # type: ignore[attr-defined]
                self.reports_sent += 1
                self.last_error = None
            except errors.VelyrixError as exc:
                self.last_error = exc.message
                log.warning("%s", exc.message)

    def run_forever(self) -> None:
        """Report until ``stop`` is set (the HTTP server runs in its own thread meanwhile)."""
        try:
            while not self.stop.is_set():
                self.report_once()
                self.stop.wait(self.report_interval_s)
        finally:
            self.server.close()
