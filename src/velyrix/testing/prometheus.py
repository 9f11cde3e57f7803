"""A real Prometheus on loopback for tests, and a scripted job schedule that writes prolog/epilog files.

``PrometheusServer`` starts Debian's ``prometheus`` binary with a generated configuration (short scrape
and rule intervals, a temporary TSDB directory, the given rule files) on a free loopback port, waits until
it is ready and every target is up, answers PromQL over the HTTP API, and removes everything on ``stop()``.

``JobSchedule`` plays a list of ``ScriptedJob``s in wall-clock time: at a job's start it does what a
scheduler prolog does (``velyrix.agent.jobs.write_prolog`` on each of its nodes, and the twin node's load
goes up), at its end what the epilog does. It records when each prolog and epilog really ran, so that
tests compare Prometheus's answer with what actually happened rather than with the plan.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from velyrix import errors
from velyrix.agent import jobs


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def prometheus_binary() -> str | None:
    """Path of Debian's ``prometheus`` (None when the package is not installed)."""
    return shutil.which("prometheus")


class PrometheusServer:
    """A throw-away Prometheus scraping ``targets`` (job name -> ["host:port", ...]) every ``interval_s``."""

    def __init__(
        self,
        targets: dict[str, list[str]],
        *,
        interval_s: float = 1.0,
        rule_files: list[Path] | None = None,
        binary: str | None = None,
        http_sd: dict[str, tuple[str, int]] | None = None,
        scrape_timeout_s: float | None = None,
        alertmanagers: list[str] | None = None,
    ):
        """``http_sd``: job name -> (HTTP service discovery URL, number of targets it lists)."""
        self.targets = targets
        self.http_sd = http_sd or {}
        self.scrape_timeout_s = scrape_timeout_s
        self.interval_s = interval_s
        self.rule_files = [Path(p).resolve() for p in rule_files or []]
        self.alertmanagers = list(alertmanagers or [])
        """``host:port`` of Alertmanagers that firing alerts are sent to."""
        self.binary = binary or prometheus_binary()
        self.port = 0
        self.root: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def config(self) -> str:
        """The generated prometheus.yml."""
        interval = f"{int(self.interval_s * 1000)}ms"
        lines = [
            "global:",
            f"  scrape_interval: {interval}",
            f"  scrape_timeout: {int((self.scrape_timeout_s or self.interval_s) * 1000)}ms",
            f"  evaluation_interval: {interval}",
        ]
        if self.rule_files:
            lines.append("rule_files:")
            lines += [f"  - '{p}'" for p in self.rule_files]
        if self.alertmanagers:
            lines += ["alerting:", "  alertmanagers:", "    - static_configs:", "        - targets:"]
            lines += [f"          - '{a}'" for a in self.alertmanagers]
        lines.append("scrape_configs:")
        for job, addrs in self.targets.items():
            lines += [f"  - job_name: '{job}'", "    static_configs:", "      - targets:"]
            lines += [f"          - '{a}'" for a in addrs]
        for job, (url, _) in self.http_sd.items():
            lines += [
                f"  - job_name: '{job}'",
                "    http_sd_configs:",
                f"      - url: '{url}'",
                "        refresh_interval: 30s",
            ]
        return "\n".join(lines) + "\n"

    def start(self, timeout_s: float = 30.0, *, wait_targets: bool = True) -> PrometheusServer:
        """Write the config, start Prometheus, wait for readiness and (``wait_targets``) for every target to be up."""
        if not self.binary:
            raise errors.ExternalToolError("prometheus is not installed", hint="apt-get install prometheus")
        self.root = Path(tempfile.mkdtemp(prefix="velyrix-prometheus-"))
        (self.root / "prometheus.yml").write_text(self.config())
        self.port = free_port()
        with open(self.root / "prometheus.log", "wb") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                [
                    self.binary,
                    f"--config.file={self.root / 'prometheus.yml'}",
                    f"--storage.tsdb.path={self.root / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--storage.tsdb.retention.time=1h",
                    "--log.level=warn",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise errors.ExternalToolError(f"prometheus exited: {self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        else:
            self.stop()
            raise errors.ExternalToolError(f"prometheus not ready after {timeout_s}s")
        if wait_targets:
            self.wait_targets_up(deadline - time.monotonic())
        return self

    def wait_targets_up(self, timeout_s: float) -> None:
        """Block until every configured target has been scraped successfully."""
        want = sum(len(a) for a in self.targets.values()) + sum(n for _, n in self.http_sd.values())
        deadline = time.monotonic() + max(timeout_s, 1.0)
        while time.monotonic() < deadline:
            up = self.query("up == 1")
            if len(up) >= want:
                return
            time.sleep(self.interval_s / 4)
        raise errors.ExternalToolError(f"targets not up after {timeout_s:.0f}s: {self.query('up')}")

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """Instant PromQL query (``at``: Unix time s; default now); returns the API's result vector."""
        params: dict[str, str] = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        resp = httpx.get(f"{self.url}/api/v1/query", params=params, timeout=10)
        data = resp.json()
        if data.get("status") != "success":
            raise errors.ExternalToolError(f"PromQL {expr!r} failed: {data.get('error')}")
        result: list[dict[str, Any]] = data["data"]["result"]
        return result

    def query_by(self, expr: str, label: str, at: float | None = None) -> dict[str, float]:
        """``query`` as {value of ``label``: float value}."""
        return {r["metric"].get(label, ""): float(r["value"][1]) for r in self.query(expr, at)}

    def log_tail(self, chars: int = 2000) -> str:
        if self.root is None or not (self.root / "prometheus.log").exists():
            return ""
        return (self.root / "prometheus.log").read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        """Stop Prometheus and delete its directory."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class ScriptedJob:
    """A job of the schedule: GPUs per hostname, start and end (s after the schedule starts), attribution."""

    job_id: str
    gpus: dict[str, list[int]]
    start_s: float
    end_s: float
    user: str = ""
    team: str = ""
    cost_center: str = ""
    started_at: float | None = field(default=None, repr=False)
    ended_at: float | None = field(default=None, repr=False)

    @property
    def gpu_count(self) -> int:
        return sum(len(g) for g in self.gpus.values())

    def gpu_seconds(self) -> float:
        """GPU-seconds between the prolog and the epilog as they really ran (wall clock)."""
        if self.started_at is None or self.ended_at is None:
            raise errors.InvalidInputError(f"job {self.job_id} has not run yet")
        return self.gpu_count * (self.ended_at - self.started_at)


class JobSchedule:
    """Plays ``ScriptedJob``s; ``job_map_dir(hostname)`` says where each node's prolog writes;
    ``on_load(hostname, busy)`` (optional) is told when a node gets busy or idle."""

    def __init__(
        self,
        jobs_: list[ScriptedJob],
        job_map_dir: Callable[[str], Path],
        on_load: Callable[[str, bool], None] | None = None,
    ):
        self.jobs = jobs_
        self.job_map_dir = job_map_dir
        self.on_load = on_load
        self._busy: dict[str, int] = {}
        self.started_at: float | None = None

    def _prolog(self, job: ScriptedJob) -> None:
        info = {k: v for k, v in (("user", job.user), ("team", job.team), ("cost_center", job.cost_center)) if v}
        for host, gpus in job.gpus.items():
            jobs.write_prolog(self.job_map_dir(host), job.job_id, gpus, **info)
            self._busy[host] = self._busy.get(host, 0) + 1
            if self.on_load:
                self.on_load(host, True)
        job.started_at = time.time()

    def _epilog(self, job: ScriptedJob) -> None:
        for host in job.gpus:
            jobs.remove_epilog(self.job_map_dir(host), job.job_id)
            self._busy[host] -= 1
            if self.on_load and not self._busy[host]:
                self.on_load(host, False)
        job.ended_at = time.time()

    def run(self) -> None:
        """Play the whole schedule (blocks until the last epilog ran)."""
        events = sorted(
            [(j.start_s, 1, j) for j in self.jobs] + [(j.end_s, 0, j) for j in self.jobs], key=lambda e: (e[0], e[1])
        )
        t0 = time.monotonic()
        self.started_at = time.time()
        for at_s, is_start, job in events:
            delay = at_s - (time.monotonic() - t0)
            if delay > 0:
                time.sleep(delay)
            (self._prolog if is_start else self._epilog)(job)

    def run_in_background(self) -> threading.Thread:
        """Play the schedule in a thread; join it to wait for the end."""
        thread = threading.Thread(target=self.run, name="job-schedule", daemon=True)
        thread.start()
        return thread
