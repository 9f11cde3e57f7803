"""Counts stay true after the spares run out: once a cluster loses a node it cannot replace, its conditions
say how many nodes it holds and how many were replaced (not the figures of its last delivery), and the NOC
incident's title counts what the database holds. ``velyrix up``'s app and twin on SQLite, the agent's
report over HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reconcile.test_node_reports_e2e import CLUSTER, Up


@pytest.fixture
def up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Up]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    plane = Up(f"sqlite:///{tmp_path / 'velyrix.db'}", twin_nodes=9)  # 8 + the one spare
    yield plane
    plane.stop()


def _conditions(up: Up, cid: str) -> dict[str, dict[str, str]]:
    cluster = up.http.get(f"/v1/clusters/{cid}", headers=up.tenant).json()
    return {c["type"]: c for c in cluster["status"]["conditions"]}


def test_conditions_and_incident_count_the_nodes_left_when_no_spare_is_left(up: Up) -> None:
    cid = up.http.post("/v1/clusters", headers=up.tenant, json=CLUSTER).json()["id"]
    up.wait_phase(cid, "Ready")
    members = sorted(n["name"] for n in up.members(cid))
    first = members[2]
    first_id = next(n["id"] for n in up.members(cid) if n["name"] == first)
    answer = up.agent_reports_fault(first, up.node_token(first_id), xid=64)
    assert any(a.startswith("replace ") for a in answer["actions"])
    up.wait_phase(cid, "Ready")
    assert _conditions(up, cid)["AcceptancePassed"]["message"] == "8 nodes; 1 replaced"

    second = sorted(n["name"] for n in up.members(cid))[0]
    second_id = next(n["id"] for n in up.members(cid) if n["name"] == second)
    answer = up.agent_reports_fault(second, up.node_token(second_id), xid=64)
    assert any(a.startswith("incident ") for a in answer["actions"])
    deadline = time.monotonic() + 30
    while len(up.members(cid)) != 7 and time.monotonic() < deadline:  # the failed node is released
        time.sleep(0.05)
    assert len(up.members(cid)) == 7
    cond = _conditions(up, cid)
    assert cond["AcceptancePassed"]["message"] == "7 of 8 nodes; 1 replaced, 1 without a spare", cond
    assert cond["Ready"]["status"] == "False" and "7 of 8 nodes" in cond["Ready"]["message"], cond["Ready"]
    (incident,) = up.http.get("/v1/incidents", headers=up.operator).json()["items"]
    assert incident["title"].startswith(f"cluster train: 2 of 8 nodes failed ({first}, {second}); 1 replaced")
