"""The running cloud closes the loop (issue 13's "done when"), on what ``velyrix up`` runs (real uvicorn on
loopback, the twin, the reconcile thread, one agent per twin node reporting over HTTP), SQLite and PostgreSQL:

- ``sim inject NODE --xid 79`` on a node of a Ready 8-node cluster: nobody posts a report by hand; the node's
  agent sees the XID on its next poll, the control plane judges the evidence, drains, quarantines and
  replaces the node (the reboot of the rung runs through the driver on the quarantined node), the cluster is
  Ready at 8 again with the replacement in the re-signed acceptance report, one P1 incident names the node;
- the same with the agent of that node in its own process (``velyrix agent --collector twin``);
- an agent that claims "healthy" while its evidence holds an uncorrectable ECC error is overruled, one that
  claims QUARANTINE on clean evidence is not obeyed; both are flagged in the node's events.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.reconcile.test_node_reports_e2e import CLUSTER, Up
from velyrix.testing.postgres import free_port

POLL_S = 0.5
"""The agents' poll cadence in these tests (wall s)."""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cloud(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Up]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'velyrix.db'}"
    else:
        url = request.getfixturevalue("pg_server").create_database(f"cloud{free_port()}")
    plane = Up(url, twin_nodes=9, agent_interval_s=POLL_S)  # 8 for the cluster, 1 spare
    yield plane
    plane.stop()


def until(what: str, check: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def ready_cluster(up: Up) -> tuple[str, list[dict[str, Any]]]:
    cid = up.http.post("/v1/clusters", headers=up.tenant, json=CLUSTER).json()["id"]
    cluster = up.wait_phase(cid, "Ready")
    (taken,) = [c for c in cluster["status"]["conditions"] if c["type"] == "Reconciling"]
    assert taken["status"] == "True" and taken["reason"] == "Reconciler"
    return cid, sorted(up.members(cid), key=lambda n: n["name"])


def inject(up: Up, hostname: str, **fault: Any) -> None:
    r = up.http.post("/v1/sim/faults", headers=up.operator, json={"node": hostname, **fault})
    assert r.status_code == 202, r.text


def healed(up: Up, cid: str, failed: str) -> dict[str, Any] | None:
    """The cluster once it is Ready at 8 nodes without ``failed``."""
    cluster = up.http.get(f"/v1/clusters/{cid}", headers=up.tenant).json()
    names = {n["name"] for n in up.members(cid)}
    ok = cluster["status"]["phase"] == "Ready" and len(names) == 8 and failed not in names
    return cluster if ok else None


def check_healed(up: Up, cid: str, failed: str, before: set[str]) -> None:
    after = {n["name"] for n in up.members(cid)}
    (spare,) = after - before
    signed = up.http.get(f"/v1/clusters/{cid}/acceptance", headers=up.tenant).json()["report"]
    assert signed["passed"] and {n["name"] for n in signed["nodes"]} == after  # re-validated, re-signed
    assert any(r["failed"] == failed and r["replacement"] == spare for r in signed["replacements"])
    node = up.http.get("/v1/nodes", params={"name": failed}, headers=up.operator).json()["items"][0]
    assert node["cluster_id"] is None and node["fleet_stage"] in ("quarantined", "burn-in", "production")
    (incident,) = up.http.get("/v1/incidents", headers=up.operator).json()["items"]
    assert incident["priority"] == "P1" and incident["nodes"] == [failed] and incident["cluster_id"] == cid
    assert incident["title"].startswith(f"cluster train: 1 of 8 nodes failed ({failed}); 1 replaced")
    events = up.http.get(f"/v1/clusters/{cid}", headers=up.tenant).json()["status"]["events"]
    (line,) = [e["message"] for e in events if e["reason"] == "NodeHealed"]
    assert line.startswith("gpu3 XID 79 ") and f"on node {failed} at " in line
    assert line.endswith(f"drained now, quarantined, replaced by {spare}")
    history = up.http.get(f"/v1/nodes/{node['id']}/events", headers=up.operator).json()["items"]
    acted = [e for e in history if e["reason"] == "HealthAction"]
    assert acted and f"quarantine {failed}" in acted[0]["message"] and f"reboot {failed}" in acted[0]["message"]
    gpu3 = up.runtime.sim.nodes[failed].gpus[3]
    assert gpu3.responsive and not gpu3.xid_events  # the rung's reboot ran through the driver: back on the bus


def test_an_injected_xid_79_is_seen_by_the_nodes_agent_and_healed_by_the_control_plane(cloud: Up) -> None:
    cid, members = ready_cluster(cloud)
    before = {n["name"] for n in members}
    victim = members[3]["name"]
    until(
        "every twin node reporting",
        lambda: len(cloud.agents.running()) == 9 and all(a.reports_sent for a in cloud.agents.agents.values()),
    )
    inject(cloud, victim, kind="xid", xid=79, gpu=3)
    until("the cluster healed", lambda: healed(cloud, cid, victim))
    check_healed(cloud, cid, victim, before)


def test_the_same_with_the_nodes_agent_in_its_own_process(
    cloud: Up, tmp_path: Path, velyrix: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cid, members = ready_cluster(cloud)
    before = {n["name"] for n in members}
    victim = members[5]["name"]
    monkeypatch.setenv("VELYRIX_ENDPOINT", cloud.url)
    monkeypatch.setenv("VELYRIX_API_KEY", cloud.operator_key)
    issued = velyrix("node", "token", victim)  # the operator moves the node's agent out of `velyrix up`
    assert issued.exit_code == 0, issued.stderr
    until("the in-process agent to stand down", lambda: victim not in cloud.agents.running())
    env = {**os.environ, "VELYRIX_NODE_TOKEN": issued.stdout.strip(), "VELYRIX_HOME": str(tmp_path)}
    command = [sys.executable, "-m", "velyrix.cli.main", "agent", "--collector", "twin", "--hostname", victim]
    command += ["--control-plane", cloud.url, "--port", "0", "--report-interval", str(POLL_S)]
    agent = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        node_id = members[5]["id"]

        def reported() -> bool:
            assert agent.poll() is None, agent.stderr.read() if agent.stderr else ""
            r = cloud.http.get(f"/v1/nodes/{node_id}/report", headers=cloud.operator)
            return r.status_code == 200 and r.json()["agent_verdict"] is not None and r.json()["reports"] >= 2

        until("the agent process reporting", reported)
        inject(cloud, victim, kind="xid", xid=79, gpu=3)
        until("the cluster healed", lambda: healed(cloud, cid, victim))
    finally:
        agent.terminate()
        agent.wait(10)
    check_healed(cloud, cid, victim, before)
    last = cloud.http.get(f"/v1/nodes/{node_id}/report", headers=cloud.operator).json()
    assert last["agent_verdict"]["reasons"][0]["key"] == "xid:79:gpu3"  # the process's own typed verdict


def _post(cloud: Up, hostname: str, token: str, sample: dict[str, Any], verdict: dict[str, Any]) -> dict[str, Any]:
    body = {"hostname": hostname, "collected_at_s": sample["collected_at_s"], "sample": sample, "verdict": verdict}
    r = cloud.http.post(f"/v1/nodes/{hostname}/reports", json=body, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_claims_the_evidence_does_not_support_are_flagged_and_not_obeyed(cloud: Up) -> None:
    cid, members = ready_cluster(cloud)
    liar, alarmist = members[1], members[6]
    tokens = {n["name"]: cloud.node_token(n["id"]) for n in (liar, alarmist)}  # their agents stand down
    until("the two agents to stand down", lambda: not {liar["name"], alarmist["name"]} & set(cloud.agents.running()))

    def telemetry(hostname: str) -> dict[str, Any]:
        auth = {"Authorization": f"Bearer {tokens[hostname]}"}
        return cloud.http.get(f"/v1/sim/nodes/{hostname}/telemetry", headers=auth).json()  # type: ignore[no-any-return]

    healthy = {"node": liar["name"], "level": "ok", "action": "IGNORE", "lemon_score": 0.0, "reasons": []}
    dbe = telemetry(liar["name"])
    dbe["gpus"][2]["ecc_dbe_volatile"] = 1
    answer = _post(cloud, liar["name"], tokens[liar["name"]], dbe, healthy)
    assert answer["agent_action"] == "IGNORE" and answer["health_action"] == "RESET_GPU"
    assert f"quarantine {liar['name']}" in answer["actions"] and "claims IGNORE" not in str(answer["actions"])
    assert "agent claims IGNORE" in answer["disagreement"]

    reason = {"key": "xid:79:gpu0", "source": "xid", "message": "made up", "level": "fatal", "action": "QUARANTINE"}
    claim = {"node": alarmist["name"], "level": "fatal", "action": "QUARANTINE", "reasons": [reason]}
    answer = _post(cloud, alarmist["name"], tokens[alarmist["name"]], telemetry(alarmist["name"]), claim)
    assert answer["health_action"] == "IGNORE" and answer["actions"] == []
    node = cloud.http.get(f"/v1/nodes/{alarmist['id']}", headers=cloud.operator).json()
    assert node["fleet_stage"] == "production" and node["cluster_id"] == cid  # not quarantined

    for n, claimed, judged in ((liar, "IGNORE", "RESET_GPU"), (alarmist, "QUARANTINE", "IGNORE")):
        events = cloud.http.get(f"/v1/nodes/{n['id']}/events", headers=cloud.operator).json()["items"]
        (flag,) = [e for e in events if e["reason"] == "AgentDisagrees"]
        assert flag["type"] == "Warning" and (flag["agent_action"], flag["server_action"]) == (claimed, judged)
    until("the liar's node replaced", lambda: healed(cloud, cid, liar["name"]))


@pytest.mark.parametrize("kind", ["ecc_dbe", "remap_failure"])
def test_a_precursor_replaces_the_node_before_the_fault_the_twin_would_throw(kind: str, tmp_path: Path) -> None:
    os.environ["VELYRIX_HOME"] = str(tmp_path)
    up = Up(f"sqlite:///{tmp_path / 'velyrix.db'}", twin_nodes=9, agent_interval_s=0.1)
    try:
        cid, members = ready_cluster(up)
        victim = members[2]["name"]
        sim = up.runtime.sim
        for _ in range(6):  # twelve quiet simulated hours of history first, seen by the agents
            sim.advance(7200.0)
            time.sleep(0.25)
        inject(up, victim, kind=kind, gpu=1, precursor_s=12 * 3600.0)  # rising SBE counts, or remaps filling a bank

        def step() -> Any:
            sim.advance(600.0)  # ten simulated minutes per step; the agents poll in between
            time.sleep(0.25)
            return healed(up, cid, victim)

        until("the node replaced on its precursor", step, timeout_s=120)
        fired = [e for e in sim.events if e.hostname == victim and e.kind == "fault"]
        assert fired == []  # replaced before the fault: the precursor window has not closed yet
        events = up.http.get(f"/v1/clusters/{cid}", headers=up.tenant).json()["status"]["events"]
        (line,) = [e["message"] for e in events if e["reason"] == "NodeHealed"]
        assert "drained after its job, quarantined, replaced by" in line
    finally:
        up.stop()
