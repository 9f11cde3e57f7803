"""The agent at run time: /metrics over HTTP, reports to a (real, tiny) control-plane HTTP server, CLI."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from velyrix import errors
from velyrix.agent import jobs, service
from velyrix.agent.collectors.sim import SimCollector
from velyrix.agent.fleet_exporter import fleet_source
from velyrix.agent.reporting import Reporter
from velyrix.fleet.drivers.sim import SimRegion


class ControlPlaneStub:
    """A real HTTP server that answers node reports with scripted status codes and records requests."""

    def __init__(self, statuses: list[int]):
        self.statuses = list(statuses)
        self.requests: list[tuple[str, dict[str, str], dict]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append((self.path, dict(self.headers), body))
                status = stub.statuses.pop(0) if stub.statuses else 200
                payload = json.dumps({"accepted": status < 300}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def control_plane() -> Iterator[ControlPlaneStub]:
    stub = ControlPlaneStub([])
    yield stub
    stub.close()


def test_agent_serves_metrics_with_the_current_job_labels(region: SimRegion, tmp_path: Path) -> None:
    node = next(iter(region.nodes.values()))
    source = service.MetricsSource([service.NodeSource(SimCollector(node, region), tmp_path)])
    server = service.serve(source)
    try:
        first = httpx.get(server.url)
        assert first.status_code == 200 and first.headers["content-type"].startswith("text/plain; version=0.0.4")
        assert 'hpc_job=""' in first.text and 'hpc_job="77"' not in first.text
        jobs.write_prolog(tmp_path, "77", [0, 1], team="ml")
        assert 'hpc_job="77"' in httpx.get(server.url).text  # the next scrape sees the prolog
        assert httpx.get(server.url.replace("/metrics", "/nope")).status_code == 404
    finally:
        server.close()


def test_fleet_exporter_serves_every_node_of_the_region(tmp_path: Path) -> None:
    twin = SimRegion.build("eu-west-1", {"hgx-h200-8g": 3, "hgx-h100-8g": 2})
    source = fleet_source(twin, job_map_root=tmp_path)
    jobs.write_prolog(tmp_path / next(iter(twin.nodes)), "j1", [0])
    body = source.render().decode()
    hosts = {
        line.split('Hostname="')[1].split('"')[0]
        for line in body.splitlines()
        if line.startswith("DCGM_FI_DEV_GPU_UTIL")
    }
    assert hosts == set(twin.nodes)
    assert body.count('hpc_job="j1"') >= 30  # one GPU's series carry the job


def test_reporter_retries_temporary_failures_then_delivers(control_plane: ControlPlaneStub, region: SimRegion) -> None:
    control_plane.statuses = [503, 502]
    sample = SimCollector(next(iter(region.nodes.values()))).collect()
    reporter = Reporter(control_plane.url, "vlx_node_secret", backoff_s=0.01)
    answer = reporter.report(sample)
    assert answer == {"accepted": True} and len(control_plane.requests) == 3
    path, headers, body = control_plane.requests[-1]
    assert path == f"/v1/nodes/{sample.hostname}/reports"
    assert headers["Authorization"] == "Bearer vlx_node_secret"
    assert body["hostname"] == sample.hostname and len(body["sample"]["gpus"]) == 8


def test_reporter_gives_up_at_once_on_a_refused_token(control_plane: ControlPlaneStub, region: SimRegion) -> None:
    control_plane.statuses = [401]
    reporter = Reporter(control_plane.url, "revoked", backoff_s=0.01)
    with pytest.raises(errors.AuthenticationError):
        reporter.report(SimCollector(next(iter(region.nodes.values()))).collect())
    assert len(control_plane.requests) == 1


def test_reporter_fails_after_its_attempts_when_nobody_listens(region: SimRegion) -> None:
    stub = ControlPlaneStub([])
    url = stub.url
    stub.close()  # the port is free again: connections are refused
    reporter = Reporter(url, "t", attempts=2, backoff_s=0.01)
    with pytest.raises(errors.AgentReportError) as info:
        reporter.report(SimCollector(next(iter(region.nodes.values()))).collect())
    assert "after 2 attempts" in info.value.message and "t" not in (info.value.hint or "")


def test_reporter_rejects_bad_configuration() -> None:
    with pytest.raises(errors.InvalidInputError):
        Reporter("ftp://cp", "t")
    with pytest.raises(errors.InvalidInputError):
        Reporter("http://cp", "")


def test_agent_service_reports_each_node(control_plane: ControlPlaneStub, region: SimRegion) -> None:
    source = fleet_source(region)
    server = service.serve(source)
    svc = service.AgentService(source, server, Reporter(control_plane.url, "t", backoff_s=0.01), 0.05)
    thread = threading.Thread(target=svc.run_forever)
    thread.start()
    try:
        for _ in range(100):
            if svc.reports_sent >= 4:
                break
            threading.Event().wait(0.02)
    finally:
        svc.stop.set()
        thread.join(5)
    assert svc.reports_sent >= 4 and svc.last_error is None
    assert {r[2]["hostname"] for r in control_plane.requests} == set(region.nodes)


def test_cli_agent_once_prints_a_scrape(velyrix) -> None:
    result = velyrix("agent", "--collector", "sim", "--sim-load", "40", "--once")
    assert result.exit_code == 0, result.stderr
    assert "DCGM_FI_DEV_GPU_UTIL{" in result.stdout and "} 40.0" in result.stdout


def test_cli_agent_rejects_an_unknown_collector(velyrix) -> None:
    result = velyrix("agent", "--collector", "nvm", "--once")
    assert result.exit_code == 2 and "did you mean 'nvml'" in result.stderr


def test_cli_sim_exporter_rejects_bad_node_counts(velyrix) -> None:
    result = velyrix("sim", "exporter", "--nodes", "hgx-h200-8g:4")
    assert result.exit_code == 2 and "NODE_TYPE=COUNT" in result.stderr
    result = velyrix("sim", "exporter", "--nodes", "hgx-h20-8g=4", "--port", "0")
    assert result.exit_code == 2 and "did you mean" in result.stderr


def test_health_verdict_is_exported_with_the_samples(region: SimRegion) -> None:
    from velyrix.agent.checks.monitor import HealthMonitor
    from velyrix.fleet.drivers.sim import Fault
    from velyrix.health.drains import InMemorySeam
    from velyrix.health.ladder import Action, Level

    host, node = next(iter(region.nodes.items()))
    collector = SimCollector(node, region)
    monitor = HealthMonitor(host, collector, InMemorySeam(), clock=region.clock.now)
    source = service.MetricsSource(
        [service.NodeSource(collector)], after_collect=[service.stamp_health(lambda: monitor.last)]
    )
    monitor.poll()
    assert "velyrix_node_health_level" in source.render().decode()
    assert source.samples()[0].health_level == Level.OK
    region.inject(host, Fault(kind="xid", gpu=4, xid=79))
    region.advance(1)
    verdict = monitor.poll()
    body = source.render().decode()
    assert f'velyrix_node_health_level{{Hostname="{host}"}} {int(Level.FATAL)}' in body
    assert f'velyrix_node_health_action{{Hostname="{host}"}} {int(verdict.action)}' in body
    assert verdict.action >= Action.REBOOT and "79" in source.samples()[0].health_summary


def _start(args: list[str]) -> tuple[object, str]:
    """Start a ``velyrix`` command that announces its /metrics URL on stderr; return (process, url)."""
    import re
    import subprocess
    import sys

    velyrix = str(Path(sys.executable).with_name("velyrix"))
    proc = subprocess.Popen([velyrix, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    match = re.search(r"(http://\S+/metrics)", line)
    if not match:
        proc.kill()
        raise AssertionError(f"no URL announced: {line!r}")
    return proc, match.group(1)


def test_velyrix_agent_process_serves_and_reports(control_plane: ControlPlaneStub) -> None:
    proc, url = _start(
        [
            "agent",
            "--collector",
            "sim",
            "--listen",
            "127.0.0.1",
            "--port",
            "0",
            "--control-plane",
            control_plane.url,
            "--node-token",
            "vlx_t",
            "--report-interval",
            "0.2",
        ]
    )
    try:
        body = httpx.get(url, timeout=10).text
        assert "velyrix_node_health_level" in body and "DCGM_FI_DEV_POWER_USAGE{" in body
        for _ in range(100):
            if control_plane.requests:
                break
            threading.Event().wait(0.05)
        path, headers, report = control_plane.requests[0]
        assert headers["Authorization"] == "Bearer vlx_t" and report["sample"]["health_level"] == 0
    finally:
        proc.terminate()  # type: ignore[attr-defined]
        proc.wait(10)  # type: ignore[attr-defined]


def test_velyrix_sim_exporter_process_serves_every_node(tmp_path: Path) -> None:
    jobs.write_prolog(tmp_path / "euw1-h200-su00-n01", "j-7", [2], team="ml")
    proc, url = _start(
        [
            "sim",
            "exporter",
            "--region",
            "eu-west-1",
            "--nodes",
            "hgx-h200-8g=3",
            "--port",
            "0",
            "--job-map-root",
            str(tmp_path),
            "--load",
            "55",
        ]
    )
    try:
        body = httpx.get(url, timeout=10).text
        util = [line for line in body.splitlines() if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
        assert len(util) == 24 and all(line.endswith(" 55.0") for line in util)
        assert sum('hpc_job="j-7"' in line for line in util) == 1
    finally:
        proc.terminate()  # type: ignore[attr-defined]
        proc.wait(10)  # type: ignore[attr-defined]
