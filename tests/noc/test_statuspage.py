"""Status pages in Statuspage's summary.json shape, read by an unmodified third-party reader:
``statuspage-prometheus-exporter`` (PyPI), run as its own console script (``RUN_MODE=once``) against
Velyrix on loopback; its Prometheus textfile says what it understood."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from prometheus_client.parser import text_string_to_metric_families

from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.fleet import clock
from velyrix.ops.noc import incidents
from velyrix.ops.service import create_app
from velyrix.testing.postgres import free_port

EXPORTER = Path(sys.executable).with_name("statuspage-prometheus-exporter")
H200, H100 = "hgx-h200-8g", "hgx-h100-8g"


def _node(s: Any, name: str, node_type: str, stage: str, cluster: models.Cluster | None = None) -> models.Node:
    n = models.Node(
        name=name,
        region="us-east-1",
        node_type=node_type,
        provisioning_state="active" if cluster else "available",
        fleet_stage=stage,
        tenant_id=cluster.tenant_id if cluster else None,
        cluster_id=cluster.id if cluster else None,
        hardware={},
        labels={},
    )
    s.add(n)
    s.flush()
    return n


def _cluster(s: Any, tenant: models.Tenant, name: str, count: int, phase: str) -> models.Cluster:
    c = models.Cluster(
        tenant_id=tenant.id,
        name=name,
        region="us-east-1",
        node_type=H200,
        node_count=count,
        spec={},
        plan={},
        conditions=[],
        phase_history=[],
        events=[],
        phase=phase,
    )
    s.add(c)
    s.flush()
    return c


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """acme: cluster 'train' (2 nodes, one running degraded: a row remap pending; a P1 on it; a window
    announced for next week); bravo: cluster 'short' that lost one of its 2 nodes (phase Degraded); every
    H100 quarantined; a provider incident (P2, acknowledged)."""
    app = create_app(f"sqlite:///{tmp_path / 'sp.db'}")
    now = clock.now()
    keys: dict[str, str] = {}
    with app.state.sessionmaker() as s:
        acme, bravo = models.Tenant(name="acme", display_name="Acme"), models.Tenant(name="bravo", display_name="B")
        s.add_all([acme, bravo])
        s.flush()
        for t in (acme, bravo):
            keys[t.name] = principals.issue_key(s, tenant_id=t.id, name=t.name, role="viewer")[1]
        train = _cluster(s, acme, "train", 2, "Ready")
        short = _cluster(s, bravo, "short", 2, "Degraded")
        slow = _node(s, "gpu-1", H200, "production", train)
        _node(s, "gpu-2", H200, "production", train)
        _node(s, "gpu-3", H200, "production", short)
        _node(s, "gpu-4", H200, "production")
        _node(s, "gpu-5", H100, "quarantined")
        s.add(models.NodeDegradation(node_id=slow.id, cluster_id=train.id, started_at=now, reason="remap pending"))
        s.add(
            models_noc.MaintenanceWindow(
                tenant_id=acme.id,
                cluster_id=train.id,
                starts_at=now + dt.timedelta(days=7),
                ends_at=now + dt.timedelta(days=7, hours=2),
                announced_at=now,
                label="fabric firmware",
            )
        )
        tenant_inc, _ = incidents.open_incident(
            s,
            key="t",
            priority="P1",
            title="train lost GPU 3",
            tenant_id=acme.id,
            cluster_id=train.id,
            source="t",
            at=now,
        )
        spine, _ = incidents.open_incident(
            s,
            key="p",
            priority="P2",
            title="spine switch 4 flapping",
            tenant_id=None,
            cluster_id=None,
            source="t",
            at=now,
        )
        incidents.act(s, spine, "ack", actor="noc", text="on it", at=now)
        s.commit()
        ids = {"acme": acme.id, "bravo": bravo.id, "train": train.id, "tenant_inc": tenant_inc.id, "spine": spine.id}
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    try:
        yield {"base": f"http://127.0.0.1:{port}", "keys": keys, "ids": ids}
    finally:
        server.should_exit = True
        thread.join(10)
        app.state.engine.dispose()


def _export(tmp_path: Path, url: str, name: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Run the third-party exporter once against ``url``; its metrics by name: [(labels, value)]."""
    work = tmp_path / "exporter"
    work.mkdir(exist_ok=True)
    (work / "services.json").write_text(json.dumps({"velyrix": {"url": url, "name": name}}))
    env = {**os.environ, "RUN_MODE": "once", "METRICS_TEXTFILE_PATH": str(work / "out.prom")}
    done = subprocess.run([str(EXPORTER)], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families((work / "out.prom").read_text()):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def test_a_third_party_reader_understands_the_regions_public_page(served: dict[str, Any], tmp_path: Path) -> None:
    url = f"{served['base']}/v1/status/regions/us-east-1/summary.json"
    metrics = _export(tmp_path, url, "Velyrix us-east-1")
    assert metrics["statuspage_probe_check"] == [({"service_name": "Velyrix us-east-1"}, 1.0)]  # it read the page
    assert metrics["statuspage_service_status"] == [({"service_name": "Velyrix us-east-1"}, 0.0)]  # not all well
    components = {labels["component_name"]: v for labels, v in metrics["statuspage_component_status"]}
    # H200: bravo's cluster is short -> partial outage; H100: no node in production -> major outage
    assert components == {"Control plane API": 1.0, f"{H200} compute": 0.0, f"{H100} compute": 0.0}
    (incident,) = metrics["statuspage_incident_info"]  # the provider's incident only: never a tenant's
    assert incident[0]["incident_id"] == served["ids"]["spine"] and incident[0]["impact"] == "major"
    assert "spine switch 4 flapping" in incident[0]["incident_name"]
    (window,) = metrics["statuspage_maintenance_info"]
    assert window[0]["maintenance_name"] == "fabric firmware" and window[0]["affected_components"] == f"{H200} compute"
    page = httpx.get(url).json()
    assert page["status"] == {"indicator": "major", "description": "Partial System Outage"}
    assert page["incidents"][0]["status"] == "identified"  # acknowledged
    assert "acme" not in json.dumps(page).lower() and "train" not in json.dumps(page)


def test_a_tenants_page_shows_its_clusters_and_incidents_to_it_alone(served: dict[str, Any], tmp_path: Path) -> None:
    acme = served["ids"]["acme"]
    path = f"/v1/status/tenants/{acme}/summary.json"
    r = httpx.get(served["base"] + path, headers={"Authorization": f"Bearer {served['keys']['acme']}"})
    assert r.status_code == 200, r.text
    page = r.json()
    assert [(c["name"], c["status"]) for c in page["components"]] == [("train", "degraded_performance")]
    (inc,) = page["incidents"]
    assert inc["id"] == served["ids"]["tenant_inc"] and inc["impact"] == "critical" and inc["status"] == "investigating"
    assert inc["components"][0]["id"] == served["ids"]["train"]
    assert page["scheduled_maintenances"][0]["status"] == "scheduled"
    assert page["status"]["indicator"] == "critical"
    other = httpx.get(served["base"] + path, headers={"Authorization": f"Bearer {served['keys']['bravo']}"})
    assert other.status_code == 404
    assert httpx.get(served["base"] + "/v1/status/regions/mars-1/summary.json").status_code == 404
