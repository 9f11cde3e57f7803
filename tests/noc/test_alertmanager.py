"""Alert intake and paging with real parts: Debian's ``prometheus-alertmanager`` posting to Velyrix
through a proxy that answers the first delivery 503 (Alertmanager retries), a real SMTP server
(``aiosmtpd``) receiving the escalation's email."""

from __future__ import annotations

import contextlib
import datetime as dt
import http.server
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from velyrix.testing import postgres

AM = shutil.which("prometheus-alertmanager")


def wait_for(check: Any, timeout_s: float = 60.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Any, str]]:
    import uvicorn

    from velyrix.controlplane.auth import principals
    from velyrix.ops.service import create_app

    app = create_app(f"sqlite:///{tmp_path / 'am.db'}")
    with app.state.sessionmaker() as s:
        key = principals.issue_key(s, tenant_id=None, name="alertmanager", role="operator")[1]
        s.commit()
    port = postgres.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, 10, "uvicorn")
    yield f"http://127.0.0.1:{port}", app, key
    server.should_exit = True
    thread.join(timeout=10)
    app.state.engine.dispose()


class FlakyProxy:
    """Forwards POSTs to ``upstream``; answers the first ``fail`` of them 503 without forwarding."""

    def __init__(self, upstream: str, fail: int = 1) -> None:
        self.upstream, self.fail, self.seen, self.forwarded = upstream, fail, 0, []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                proxy.seen += 1
                if proxy.seen <= proxy.fail:
                    self.send_response(503)
                    self.end_headers()
                    return
                r = httpx.post(
                    proxy.upstream + self.path,
                    content=body,
                    headers={
                        "authorization": self.headers.get("authorization", ""),
                        "content-type": "application/json",
                    },
                )
                proxy.forwarded.append((r.status_code, r.json()))
                self.send_response(r.status_code)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@contextlib.contextmanager
def running_alertmanager(tmp_path: Path, proxy: FlakyProxy, key: str) -> Iterator[str]:
    """Debian's Alertmanager on loopback, its webhook receiver pointed at ``proxy`` with ``key``."""
    assert AM is not None
    config = tmp_path / "alertmanager.yml"
    config.write_text(
        f"""route:
  receiver: velyrix
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 2s
receivers:
  - name: velyrix
    webhook_configs:
      - url: http://127.0.0.1:{proxy.port}/v1/alerts/alertmanager
        send_resolved: true
        max_alerts: 1
        http_config:
          authorization:
            credentials: {key}
"""
    )
    port = postgres.free_port()
    proc = subprocess.Popen(
        [
            AM,
            f"--config.file={config}",
            f"--storage.path={tmp_path / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    am = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(am), 30, "alertmanager ready")
        yield am
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def alertmanager(served: tuple[str, Any, str], tmp_path: Path) -> Iterator[tuple[str, FlakyProxy]]:
    if AM is None:
        pytest.skip("prometheus-alertmanager not installed (scripts/apt-packages.txt)")
    url, _app, key = served
    proxy = FlakyProxy(url)
    try:
        with running_alertmanager(tmp_path, proxy, key) as am:
            yield am, proxy
    finally:
        proxy.server.shutdown()


def _ready(am: str) -> bool:
    try:
        return httpx.get(am + "/-/ready", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _alerts(ends: dt.datetime | None) -> list[dict[str, Any]]:
    now = dt.datetime.now(dt.UTC)
    out = []
    for instance in ("gpu-001", "gpu-002"):
        a: dict[str, Any] = {
            "labels": {"alertname": "GpuFellOffTheBus", "severity": "critical", "instance": instance},
            "annotations": {"summary": "GPU fell off the bus (XID 79)"},
            "startsAt": (now - dt.timedelta(minutes=1)).isoformat(),
        }
        if ends:
            a["endsAt"] = ends.isoformat()
        out.append(a)
    return out


def test_one_group_posted_again_and_retried_opens_one_incident_then_mitigates(
    served: tuple[str, Any, str], alertmanager: tuple[str, FlakyProxy]
) -> None:
    from velyrix.controlplane.db import health_tables
    from velyrix.ops.noc import incidents

    _url, app, _key = served
    am, proxy = alertmanager
    assert httpx.post(am + "/api/v2/alerts", json=_alerts(None), timeout=5).status_code == 200
    wait_for(lambda: len(proxy.forwarded) >= 3, 60, "three deliveries after the 503")
    assert proxy.seen >= 4 and all(code == 200 for code, _ in proxy.forwarded)
    with app.state.sessionmaker() as s:
        rows = s.query(health_tables.Incident).all()
        assert len(rows) == 1 and rows[0].priority == "P1" and rows[0].key.startswith("alertmanager:")
        timeline = incidents.timeline(s, rows[0].id)
        assert sum(1 for e in timeline if e.kind == "alert") == 1  # max_alerts 1: one alert shown
        assert any("1 more alerts of the group truncated" in e.text for e in timeline)
    assert [body["changed"] for _, body in proxy.forwarded][1:3] == [False, False]

    assert httpx.post(am + "/api/v2/alerts", json=_alerts(dt.datetime.now(dt.UTC)), timeout=5).status_code == 200

    def mitigated() -> bool:
        with app.state.sessionmaker() as s:
            inc = s.query(health_tables.Incident).one()
            return incidents.state_of(s, inc).state == "mitigated"

    wait_for(mitigated, 60, "the resolved group to mitigate the incident")


def test_unacknowledged_p1_emails_the_next_level_at_its_delay(tmp_path: Path) -> None:
    from aiosmtpd.controller import Controller

    from velyrix.ops.noc import incidents, paging
    from velyrix.ops.service import create_app

    class Inbox:
        def __init__(self) -> None:
            self.messages: list[tuple[list[str], bytes]] = []

        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            self.messages.append((list(envelope.rcpt_tos), envelope.content))
            return "250 OK"

    inbox = Inbox()
    port = postgres.free_port()
    smtp = Controller(inbox, hostname="127.0.0.1", port=port)
    smtp.start()
    app = create_app(f"sqlite:///{tmp_path / 'p.db'}")
    pager = paging.Pager(smtp_port=port)
    opened = dt.datetime(2026, 11, 3, tzinfo=dt.UTC)
    try:
        with app.state.sessionmaker() as s:
            incidents.open_incident(
                s,
                key="k",
                priority="P1",
                title="cluster down",
                tenant_id=None,
                cluster_id=None,
                source="test",
                at=opened,
            )
            incidents.sweep(s, opened + dt.timedelta(minutes=14, seconds=59), pager)
            assert [r for r, _ in inbox.messages] == [["noc-oncall@velyrix.example"]]
            incidents.sweep(s, opened + dt.timedelta(minutes=15), pager)
            assert [r for r, _ in inbox.messages][1:] == [["noc-lead@velyrix.example"]]
            assert b"[P1] INC-00001: cluster down" in inbox.messages[1][1]
            s.commit()
    finally:
        smtp.stop()
        app.state.engine.dispose()


def test_the_running_service_sweeps_and_emails_an_unacknowledged_p1(tmp_path: Path) -> None:
    import uvicorn
    from aiosmtpd.controller import Controller

    from velyrix.ops.noc import incidents, paging, sweeping
    from velyrix.ops.service import create_app

    class Inbox:
        def __init__(self) -> None:
            self.rcpts: list[str] = []

        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            self.rcpts.extend(envelope.rcpt_tos)
            return "250 OK"

    inbox = Inbox()
    smtp = Controller(inbox, hostname="127.0.0.1", port=postgres.free_port())
    smtp.start()
    app = create_app(f"sqlite:///{tmp_path / 's.db'}")
    sweeping.install(app, 0.2, paging.Pager(smtp_port=smtp.port))
    with app.state.sessionmaker() as s:  # opened 16 minutes ago, nobody acknowledged
        incidents.open_incident(
            s,
            key="k",
            priority="P1",
            title="cluster down",
            tenant_id=None,
            cluster_id=None,
            source="test",
            at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=16),
        )
        s.commit()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=postgres.free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(inbox.rcpts) >= 2, 30, "two pages")
        time.sleep(0.6)  # a few more sweeps: nothing is sent twice
        assert inbox.rcpts == ["noc-oncall@velyrix.example", "noc-lead@velyrix.example"]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        smtp.stop()
        app.state.engine.dispose()


@pytest.mark.prometheus
def test_prometheus_on_the_twin_fires_the_shipped_rule_and_one_p1_incident_opens(
    served: tuple[str, Any, str], tmp_path: Path
) -> None:
    from velyrix.agent import service
    from velyrix.agent.collectors.sim import region_lock
    from velyrix.agent.fleet_exporter import fleet_source
    from velyrix.controlplane.db import health_tables
    from velyrix.fleet.drivers.sim import Fault, SimClock, SimRegion
    from velyrix.testing.prometheus import PrometheusServer, prometheus_binary

    if AM is None or prometheus_binary() is None:
        pytest.skip("needs prometheus and prometheus-alertmanager (scripts/apt-packages.txt)")
    url, app, key = served
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 2}, seed=5, clock=SimClock(speed=1.0))
    hosts = list(region.nodes)
    exporter = service.serve(fleet_source(region, job_map_root=tmp_path, hostnames=hosts))
    proxy = FlakyProxy(url)
    rules = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "velyrix-rules.yml"
    try:
        with running_alertmanager(tmp_path, proxy, key) as am:
            prom = PrometheusServer(
                {"velyrix-sim-exporter": [f"127.0.0.1:{exporter.port}"]},
                interval_s=1.0,
                rule_files=[rules],
                alertmanagers=[am.removeprefix("http://")],
            )
            prom.start()
            try:
                with region_lock(region):
                    region.inject(hosts[1], Fault(kind="xid", gpu=3, xid=79))
                wait_for(lambda: len(proxy.forwarded) >= 3, 90, "Alertmanager's deliveries of the fatal XID")
            finally:
                prom.stop()
    finally:
        proxy.server.shutdown()
        exporter.close()
    with app.state.sessionmaker() as s:
        rows = s.query(health_tables.Incident).all()
    assert len(rows) == 1 and rows[0].priority == "P1"
    assert "VelyrixGPUFatalXID" in rows[0].key and hosts[1] in rows[0].title
