"""PagerDuty Events v2 with real parts: PagerDuty's official Python client (``pagerduty`` on PyPI, unmodified)
sends trigger/acknowledge/resolve events to Velyrix served over TLS on loopback (the client refuses any
URL but https://), and Velyrix's outgoing pages in Events v2 format reach a loopback receiver."""

from __future__ import annotations

import datetime as dt
import http.server
import json
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pagerduty as pd
import pytest
import uvicorn

from tests.identity.certs import Pki, make_pki
from velyrix import errors
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.ops.noc import escalation, incidents, paging
from velyrix.ops.noc import pagerduty as intake
from velyrix.ops.service import create_app
from velyrix.testing.postgres import free_port


def wait_for(check: Any, timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (got := check()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    return got


class Served:
    def __init__(self, tmp_path: Path) -> None:
        self.pki: Pki = make_pki(tmp_path / "pki")
        self.app = create_app(f"sqlite:///{tmp_path / 'pd.db'}")
        with self.app.state.sessionmaker() as s:
            self.keys: dict[str, str] = {}
            self.tenants: dict[str, str] = {}
            for name in ("acme", "bravo"):
                t = models.Tenant(name=name, display_name=name.title())
                s.add(t)
                s.flush()
                self.tenants[name] = t.id
                self.keys[name] = principals.issue_key(s, tenant_id=t.id, name=name, role="owner")[1]
            self.keys["operator"] = principals.issue_key(s, tenant_id=None, name="noc", role="operator")[1]
            s.commit()
        self.port = free_port()
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            ssl_certfile=str(self.pki.cert),
            ssl_keyfile=str(self.pki.key),
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_for(lambda: self.server.started)
        self.base = f"https://127.0.0.1:{self.port}"
        self.http = httpx.Client(base_url=self.base, verify=ssl.create_default_context(cafile=str(self.pki.ca)))

    def h(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"}

    def client(self, routing_key: str) -> pd.EventsApiV2Client:
        """PagerDuty's client, its events URL pointed at Velyrix (``verify`` goes to its httpx2 client)."""
        ctx = ssl.create_default_context(cafile=str(self.pki.ca))
        return pd.EventsApiV2Client(routing_key, base_url=f"{self.base}/v1/pagerduty", verify=ctx)

    def integration(self, service: str, tenant: str | None) -> str:
        body = {"service": service, "tenant_id": self.tenants[tenant] if tenant else None}
        r = self.http.post("/v1/event-integrations", json=body, headers=self.h("operator"))
        assert r.status_code == 201, r.text
        return str(r.json()["routing_key"])

    def stop(self) -> None:
        self.http.close()
        self.server.force_exit = True  # the client's keep-alive connection would hold a graceful stop 10 s
        self.server.should_exit = True
        self.thread.join(10)
        self.app.state.engine.dispose()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    s = Served(tmp_path)
    try:
        yield s
    finally:
        s.stop()


def _incidents(served: Served, who: str) -> list[dict[str, Any]]:
    r = served.http.get("/v1/incidents", headers=served.h(who))
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


def test_the_official_client_triggers_acknowledges_and_resolves_one_incident(served: Served) -> None:
    key = served.integration("acme-training-monitor", "acme")
    assert len(key) == 32
    client = served.client(key)
    dedup = client.trigger("GPU 3 fell off the bus on gpu-007", "gpu-007", dedup_key="gpu-007/xid79")
    assert dedup == "gpu-007/xid79"
    # the same alert again (a sender's retry or repeat): still one incident
    assert client.trigger("GPU 3 fell off the bus on gpu-007", "gpu-007", dedup_key="gpu-007/xid79") == dedup
    (inc,) = _incidents(served, "acme")
    assert inc["priority"] == "P1" and inc["state"] == "open" and inc["source"] == "pagerduty"
    assert inc["tenant_id"] == served.tenants["acme"]
    assert _incidents(served, "bravo") == []  # another tenant never sees it
    client.acknowledge(dedup)
    assert _incidents(served, "acme")[0]["state"] == "acknowledged"
    client.resolve(dedup)
    (inc,) = _incidents(served, "acme")
    assert inc["state"] == "resolved"
    detail = served.http.get(f"/v1/incidents/{inc['id']}", headers=served.h("acme")).json()
    kinds = [(e["kind"], e["detail"].get("to")) for e in detail["timeline"]]
    assert kinds == [("opened", None), ("alert", None), ("state", "acknowledged"), ("state", "resolved")]
    assert all(e["actor"].endswith("(pagerduty:acme-training-monitor)") for e in detail["timeline"][1:])
    # a trigger without a dedup_key gets one generated (and a new incident); resolve of an unknown key: 202
    generated = client.trigger("disk latency high", "storage-1", severity="warning")
    assert len(generated) == 32 and generated != dedup
    client.resolve("never-triggered")
    assert sorted(i["priority"] for i in _incidents(served, "acme")) == ["P1", "P3"]
    with served.app.state.sessionmaker() as s:
        audited = s.query(models.AuditEvent).filter_by(action="alerts.pagerduty").count()
    assert audited == 6  # one per event accepted


def test_refusals_have_pagerdutys_shape_and_status(served: Served) -> None:
    served.integration("provider-fabric", None)
    with pytest.raises(pd.HttpError) as bad_key:
        served.client("0" * 32).trigger("x", "y")
    assert bad_key.value.response.status_code == 400
    assert bad_key.value.response.json() == {
        "status": "invalid event",
        "message": "Event object is invalid",
        "errors": ["Invalid routing key"],
    }
    r = served.http.post(
        "/v1/pagerduty/v2/enqueue",
        json={"routing_key": "short", "event_action": "trigger", "payload": {"summary": "s", "severity": "loud"}},
    )
    assert r.status_code == 400 and r.json()["status"] == "invalid event"
    assert r.json()["errors"] == [
        "Length of 'routing_key' is incorrect (should be 32 characters)",
        "'source' is missing or blank",
        "'payload.severity' is invalid (must be one of critical, error, warning, info)",
    ]
    r = served.http.post("/v1/pagerduty/v2/enqueue", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["status"] == "invalid event"  # refused at the API's edge
    assert r.json()["errors"][0].startswith("body: invalid JSON at line 1")
    assert served.http.get("/v1/incidents", headers=served.h("operator")).json()["items"] == []
    # a tenant key cannot create integrations
    r = served.http.post("/v1/event-integrations", json={"service": "mine"}, headers=served.h("acme"))
    assert r.status_code == 403


class Receiver:
    """A loopback HTTP server that answers like PagerDuty's events endpoint and keeps what it got."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                receiver.bodies.append({"path": self.path, "body": body})
                out = json.dumps({"status": "success", "message": "Event processed", "dedup_key": body["dedup_key"]})
                self.send_response(202)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(out.encode())

            def log_message(self, *args: Any) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v2/enqueue"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_escalation_pages_in_events_v2_format_to_the_configured_url(tmp_path: Path) -> None:
    receiver = Receiver()
    policies_file = tmp_path / "policies.toml"  # what VELYRIX_ESCALATION_POLICIES names
    policies_file.write_text(
        "[escalation_policy.pd]\n[[escalation_policy.pd.level]]\ndelay_min = 0\n"
        f'targets = ["pagerduty:{receiver.url}"]\n'
    )
    policies = escalation.load_overrides(str(policies_file))
    app = create_app(f"sqlite:///{tmp_path / 'out.db'}")
    opened = dt.datetime(2026, 11, 3, tzinfo=dt.UTC)
    try:
        with app.state.sessionmaker() as s:
            inc, _ = incidents.open_incident(
                s, key="k", priority="P1", title="cluster down", tenant_id=None, cluster_id=None, source="t", at=opened
            )
            incidents.state_of(s, inc).escalation_policy = "pd"
            sent = incidents.sweep(s, opened, paging.Pager(routing_key="R" * 32), policies)
            s.commit()
    finally:
        receiver.server.shutdown()
        app.state.engine.dispose()
    assert sent == [f"INC-00001 P1 level 0 -> pagerduty:{receiver.url}"]
    (got,) = receiver.bodies
    body = got["body"]
    assert got["path"] == "/v2/enqueue"
    assert body["routing_key"] == "R" * 32 and body["event_action"] == "trigger" and body["dedup_key"] == "INC-00001"
    assert body["payload"]["severity"] == "critical" and body["payload"]["summary"] == "INC-00001 P1: cluster down"
    assert intake.validate(body) == []  # what Velyrix sends, Velyrix's own intake would take


def test_a_broken_policies_file_is_refused_with_its_name(tmp_path: Path) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text('[escalation_policy.x]\n[[escalation_policy.x.level]]\ndelay_min = 0\ntargets = ["sms:123"]\n')
    with pytest.raises(errors.InvalidInputError, match="escalation target 'sms:123' of policy x"):
        escalation.load_overrides(str(bad))
