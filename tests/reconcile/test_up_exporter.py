"""``velyrix up`` serves the fleet exporter of its own twin (issue 13, "the fleet exporter serves the same nodes"):
the composition of ``up`` (uvicorn on loopback, the twin, one agent per node, the exporter) lists every twin node
at ``/sd``, each node's scrape carries that node's series, and a fault injected with ``velyrix sim inject`` shows
in the scrape with the same counts the node's agent reads. The real ``velyrix up`` process serves it on
``--exporter-port`` and refuses a port in use with a clear error."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.reconcile.test_node_reports_e2e import Up
from velyrix.agent.collectors.sim import twin_sample
from velyrix.testing.postgres import free_port


@pytest.fixture
def plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Up]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    # The agents poll once at start, then the test polls them itself: an agent acting on the injected XID
    # (the ladder's reboot clears the kernel's XID log) must not race the scrape that looks for it.
    up = Up(f"sqlite:///{tmp_path / 'velyrix.db'}", twin_nodes=3, agent_interval_s=3600.0, exporter=True)
    yield up
    up.stop()


def until(what: str, check: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (got := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return got


def scrape(base: str, path: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """One scrape of ``base + path``: metric sample name -> (labels, value) of every series."""
    r = httpx.get(base + path, timeout=10)
    assert r.status_code == 200, r.text
    series: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            series.setdefault(s.name, []).append((s.labels, s.value))
    return series


def xid_series(scraped: dict[str, list[tuple[dict[str, str], float]]]) -> dict[tuple[str, str], float]:
    """(gpu, xid) -> count of ``velyrix_gpu_xid_errors_total`` in one node's scrape."""
    return {(lab["gpu"], lab["xid"]): v for lab, v in scraped.get("velyrix_gpu_xid_errors_total", [])}


def test_up_serves_every_twin_node_and_an_injected_fault_shows_in_the_scrape(
    plane: Up, velyrix: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert plane.exporter is not None and plane.runtime.sim is not None
    base = f"http://{plane.exporter.host}:{plane.exporter.port}"
    groups = httpx.get(plane.exporter.sd_url, timeout=10).json()
    listed = {g["labels"]["Hostname"]: g for g in groups}
    fleet = {n["name"] for n in plane.http.get("/v1/nodes", headers=plane.operator).json()["items"]}
    assert set(listed) == set(plane.runtime.sim.nodes) == fleet and len(fleet) == 3  # the same nodes
    for host, group in listed.items():
        assert group["targets"] == [f"{plane.exporter.host}:{plane.exporter.port}"]
        temps = scrape(base, group["labels"]["__metrics_path__"])["DCGM_FI_DEV_GPU_TEMP"]
        assert sorted(int(lab["gpu"]) for lab, _ in temps) == list(range(8))
        assert {lab["Hostname"] for lab, _ in temps} == {host}

    victim = sorted(fleet)[1]
    path = listed[victim]["labels"]["__metrics_path__"]
    assert xid_series(scrape(base, path)) == {}
    monkeypatch.setenv("VELYRIX_ENDPOINT", plane.url)
    monkeypatch.setenv("VELYRIX_API_KEY", plane.operator_key)
    done = velyrix("sim", "inject", victim, "--xid", "79", "--gpu", "2")
    assert done.exit_code == 0 and victim in done.stdout, done.stderr
    seen = until("XID 79 in the scrape", lambda: xid_series(scrape(base, path)))
    assert seen == {("2", "79"): 1.0}
    agents_read = twin_sample(plane.runtime.sim, victim)  # what the node's agent reads and reports
    assert {(str(g.index), str(x)): float(n) for g in agents_read.gpus for x, n in g.xid_counts.items()} == seen
    for other in sorted(fleet - {victim}):  # the other nodes' series are untouched
        assert xid_series(scrape(base, listed[other]["labels"]["__metrics_path__"])) == {}
    assert plane.agents is not None
    agent = plane.agents.agents[victim]

    def reported() -> bool:
        agent.tick()  # one poll: collect, judge, report
        return "79" in str(agent.monitor.last)

    until("the node's agent reporting the XID", reported)


def _up(home: Path, port: int, exporter_port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "VELYRIX_HOME": str(home)}
    env.pop("VELYRIX_DATABASE_URL", None)
    args = ["up", "--no-delays", "--nodes", "hgx-h200-8g=2", "--agent-interval", "0"]
    args += ["--port", str(port), "--exporter-port", str(exporter_port)]
    return subprocess.Popen(
        [sys.executable, "-m", "velyrix.cli.main", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _sd(url: str, proc: subprocess.Popen[str]) -> Any:
    def ready() -> Any:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else "velyrix up exited"
        try:
            return httpx.get(url, timeout=2).json()
        except httpx.TransportError:
            return None

    return until("velyrix up's exporter", ready, timeout_s=60.0)


def test_velyrix_up_serves_the_exporter_and_refuses_a_port_in_use(tmp_path: Path) -> None:
    exporter_port = free_port()
    first = _up(tmp_path / "a", free_port(), exporter_port)
    try:
        groups = _sd(f"http://127.0.0.1:{exporter_port}/sd", first)
        assert sorted(g["labels"]["Hostname"] for g in groups) == ["use1-h200-su00-n00", "use1-h200-su00-n01"]
        second = _up(tmp_path / "b", free_port(), exporter_port)
        _, err = second.communicate(timeout=60)
        assert second.returncode == 2 and f"cannot listen on 127.0.0.1:{exporter_port}" in err
        assert "--exporter-port" in err and "Traceback" not in err
    finally:
        first.terminate()
        first.wait(15)
