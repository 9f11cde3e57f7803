"""Node agents report to the control plane of ``velyrix up`` (real uvicorn on loopback, the twin, the
reconcile thread): a fatal XID on a node of a Ready cluster ends with the node quarantined, sent to RMA and
replaced from the spares, the cluster Ready again at its size; with no spare left the NOC gets an incident.
The real ``velyrix agent --collector sim`` process reports over the same wire contract."""

from __future__ import annotations

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

from velyrix.agent import service
from velyrix.agent.checks.monitor import HealthMonitor
from velyrix.agent.collectors.sim import SimCollector
from velyrix.agent.reporting import Reporter
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import phases
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.health.drains import InMemorySeam
from velyrix.ops import twin_agents
from velyrix.ops.service import create_app
from velyrix.testing.postgres import free_port

CLUSTER = {
    "name": "train",
    "region": "us-east-1",
    "node_type": "hgx-h200-8g",
    "node_count": 8,
    "fabric": "infiniband-ndr",
    "scheduler": "slurm",
}


class Up:
    """What ``velyrix up`` runs (app of ``velyrix.ops.service``, twin runtime, reconcile thread), served by a
    real uvicorn on a free loopback port."""

    def __init__(
        self,
        db_url: str,
        twin_nodes: int,
        agent_interval_s: float = 0.0,
        node_counts: dict[str, int] | None = None,
        exporter: bool = False,
        state_file: Path | None = None,
    ) -> None:
        """``node_counts``: twin nodes per type (default: ``twin_nodes`` H200 nodes); ``exporter``: serve the
        twin's fleet exporter too (``velyrix up --exporter-port``) on a free port, at ``self.exporter``;
        ``state_file``: the twin's state file (``velyrix up`` keeps one), to start again on the same database."""
        self.app = create_app(db_url)
        self.runtime = FleetRuntime.twin(
            self.app.state.sessionmaker,
            "us-east-1",
            node_counts=node_counts or {"hgx-h200-8g": twin_nodes},
            seed=3,
            delays=False,
            settings=phases.ReconcileSettings(poll_s=0.01, idle_s=0.05),
            state_file=state_file,
        )
        self.runtime.attach(self.app)
        with self.app.state.sessionmaker() as s:
            t = s.query(models.Tenant).filter_by(name="acme").one_or_none() or models.Tenant(
                name="acme", display_name="ACME"
            )
            s.add(t)
            s.flush()
            owner = principals.issue_key(s, tenant_id=t.id, name="t", role="owner")[1]
            self.tenant = {"Authorization": f"Bearer {owner}"}
            op = principals.issue_key(s, tenant_id=None, name="noc", role="operator")[1]
            self.operator_key = op
            self.operator = {"Authorization": f"Bearer {op}"}
            s.commit()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        self.runtime.start()
        self.http = httpx.Client(base_url=self.url, timeout=10)
        self.agents: twin_agents.TwinAgents | None = None
        if agent_interval_s > 0:  # what `velyrix up` runs: one agent per twin node, reporting over HTTP
            assert self.runtime.sim is not None
            self.agents = twin_agents.TwinAgents(
                self.app.state.sessionmaker, self.runtime.sim, self.url, interval_s=agent_interval_s
            )
            self.agents.start()
        self.exporter = twin_agents.serve_exporter(self.runtime.sim, port=0) if exporter and self.runtime.sim else None

    def stop(self) -> None:
        if self.agents is not None:
            self.agents.stop()
        if self.exporter is not None:
            self.exporter.close()
        self.http.close()
        self.runtime.stop()
        self.server.should_exit = True
        self.thread.join(5)
        self.app.state.engine.dispose()

    def wait_phase(self, cid: str, phase: str, timeout_s: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            cluster = self.http.get(f"/v1/clusters/{cid}", headers=self.tenant).json()
            if cluster["status"]["phase"] == phase or time.monotonic() > deadline:
                assert cluster["status"]["phase"] == phase, cluster["status"]
                return cluster  # type: ignore[no-any-return]
            time.sleep(0.05)

    def members(self, cid: str) -> list[dict[str, Any]]:
        items = self.http.get("/v1/nodes", params={"cluster_id": cid, "limit": 200}, headers=self.operator).json()
        return list(items["items"])

    def node_token(self, node_id: str) -> str:
        r = self.http.post(f"/v1/nodes/{node_id}/credentials", headers=self.operator)
        assert r.status_code == 201, r.text
        return str(r.json()["node_token"])

    def agent_reports_fault(self, hostname: str, token: str, xid: int) -> dict[str, Any]:
        """The agent on ``hostname``: its sim collector and health monitor read the twin's node, the operator
        injects the XID through the API, and the agent's Reporter sends the next sample with its verdict."""
        sim = self.runtime.sim
        assert sim is not None
        collector = SimCollector(sim.nodes[hostname], sim)
        monitor = HealthMonitor(hostname, collector, InMemorySeam(), clock=sim.clock.now)
        monitor.poll()
        r = self.http.post(
            "/v1/sim/faults", headers=self.operator, json={"node": hostname, "kind": "xid", "xid": xid, "gpu": 1}
        )
        assert r.status_code == 202, r.text
        sim.advance(1.0)
        monitor.poll()
        source = service.MetricsSource(
            [service.NodeSource(collector)], after_collect=[service.stamp_health(lambda: monitor.last)]
        )
        reporter = Reporter(self.url, token, backoff_s=0.05, attempts=6)
        try:
            return reporter.report(source.samples()[0])
        finally:
            reporter.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def up(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Up]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'velyrix.db'}"
    else:
        url = request.getfixturevalue("pg_server").create_database(f"e2e{free_port()}")
    plane = Up(url, twin_nodes=9)  # 8 for the cluster, 1 held back as the spare (5% of 9, rounded up)
    yield plane
    plane.stop()


def test_fatal_xid_reported_by_the_agent_quarantines_replaces_and_opens_an_incident_when_spares_run_out(up: Up) -> None:
    cid = up.http.post("/v1/clusters", headers=up.tenant, json=CLUSTER).json()["id"]
    up.wait_phase(cid, "Ready")
    before = {n["name"] for n in up.members(cid)}
    assert len(before) == 8
    first = sorted(before)[2]
    first_id = next(n["id"] for n in up.members(cid) if n["name"] == first)

    answer = up.agent_reports_fault(first, up.node_token(first_id), xid=64)
    assert answer["health_action"] == "QUARANTINE"
    assert f"quarantine {first}" in answer["actions"] and f"rma {first}" in answer["actions"]
    (replaced,) = [a for a in answer["actions"] if a.startswith("replace ")]
    spare = replaced.split()[3]
    assert spare not in before

    cluster = up.wait_phase(cid, "Ready")
    after = {n["name"] for n in up.members(cid)}
    assert after == before - {first} | {spare} and cluster["node_count"] == 8
    assert all(n["fleet_stage"] == "production" and n["provisioning_state"] == "active" for n in up.members(cid))
    signed = up.http.get(f"/v1/clusters/{cid}/acceptance", headers=up.tenant).json()["report"]
    assert signed["passed"] and {n["name"] for n in signed["nodes"]} == after  # re-validated and re-signed
    assert any(r["failed"] == first and r["replacement"] == spare for r in signed["replacements"])
    gone = up.http.get(f"/v1/nodes/{first_id}", headers=up.operator).json()
    assert gone["cluster_id"] is None and gone["fleet_stage"] == "rma" and gone["tenant_id"] is None
    last = up.http.get(f"/v1/nodes/{first_id}/report", headers=up.operator).json()
    assert last["health_action"] == "QUARANTINE" and last["health_summary"].startswith("xid:64:")
    (rma,) = up.http.get("/v1/rma-records", headers=up.operator).json()["items"]
    assert rma["node_name"] == first and rma["reasons"][0].startswith("xid:64:") and rma["serial"]
    assert up.http.get("/v1/rma-records", headers=up.tenant).status_code == 403
    with up.app.state.sessionmaker() as s:
        moves = [
            (t.from_state, t.to_state)
            for t in s.query(models.NodeTransition)
            .filter_by(node_id=first_id)
            .order_by(models.NodeTransition.at, models.NodeTransition.id)
            if t.field == "fleet_stage"
        ]
    assert moves[-2:] == [("production", "quarantined"), ("quarantined", "rma")]

    # the spare is used up: the next fatal node cannot be replaced and the NOC hears of it
    second = sorted(after - {spare})[0]
    second_id = next(n["id"] for n in up.members(cid) if n["name"] == second)
    answer = up.agent_reports_fault(second, up.node_token(second_id), xid=64)
    assert f"quarantine {second}" in answer["actions"]
    (incident_line,) = [a for a in answer["actions"] if a.startswith("incident ")]
    incidents = up.http.get("/v1/incidents", headers=up.operator).json()["items"]
    assert [i["number"] for i in incidents] == [incident_line.split()[1]]  # one incident per cluster
    assert incidents[0]["cluster_id"] == cid and incidents[0]["nodes"] == [first, second]
    assert incidents[0]["priority"] == "P1"  # a fatal XID hit the tenant's job
    assert incidents[0]["title"] == (
        f"cluster train: 2 of 8 nodes failed ({first}, {second}); 1 replaced from spares, 1 without a hgx-h200-8g spare"
    )  # the counts come from the database, not from the last event
    tenant_view = up.http.get("/v1/incidents", headers=up.tenant).json()["items"]
    assert [i["id"] for i in tenant_view] == [incidents[0]["id"]]  # the tenant sees its cluster's incident
    events = up.http.get(f"/v1/clusters/{cid}", headers=up.tenant).json()["status"]["events"]
    assert any(e["reason"] == "NoSpare" for e in events)


def test_the_agent_process_reports_to_velyrix_up_with_its_node_token(
    up: Up, tmp_path: Path, velyrix: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostname = "use1-h200-su00-n00"  # the agent's one-node twin and the control plane's twin share hostnames
    (node,) = up.http.get("/v1/nodes", params={"name": hostname}, headers=up.operator).json()["items"]
    node_id = node["id"]
    monkeypatch.setenv("VELYRIX_ENDPOINT", up.url)
    monkeypatch.setenv("VELYRIX_API_KEY", up.operator_key)
    issued = velyrix("node", "token", hostname)
    assert issued.exit_code == 0, issued.stderr
    token = issued.stdout.strip()
    assert token.startswith("vlxn_") and "shown once" in issued.stderr
    assert velyrix("node", "token", "use1-h200-su09-n99").exit_code == 2
    env = {**os.environ, "VELYRIX_NODE_TOKEN": token, "VELYRIX_HOME": str(tmp_path)}
    agent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "velyrix.cli.main",
            "agent",
            "--collector",
            "sim",
            "--port",
            "0",
            "--control-plane",
            up.url,
            "--report-interval",
            "0.2",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = up.http.get(f"/v1/nodes/{node_id}/report", headers=up.operator)
            if r.status_code == 200 and r.json()["reports"] >= 2:
                break
            assert agent.poll() is None, agent.stderr.read() if agent.stderr else ""
            time.sleep(0.2)
        report = r.json()
        assert r.status_code == 200 and report["hostname"] == hostname and report["reports"] >= 2
        assert report["up"] and report["health_action"] == "IGNORE" and report["actions"] == []
        assert len(report["sample"]["gpus"]) == 8
    finally:
        agent.terminate()
        agent.wait(10)
    # the rotated token replaces the agent's: the old one is refused on its next request
    up.node_token(node_id)
    stale = up.http.post(
        f"/v1/nodes/{hostname}/reports",
        headers={"Authorization": f"Bearer {token}"},
        json={"hostname": hostname, "collected_at_s": 1.0},
    )
    assert stale.status_code == 401
