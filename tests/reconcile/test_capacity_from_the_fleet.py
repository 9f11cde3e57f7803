"""Region capacity comes from the fleet's node table, through the function the allocator uses: it equals the
twin's node counts in every state, quarantined nodes are not available, spares round the same way as the
allocator's, a tenant sees only its own usage, and concurrent declarations are checked under one lock."""

from __future__ import annotations

import concurrent.futures
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reconcile.test_node_reports_e2e import CLUSTER, Up
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.testing.postgres import free_port


def _plane(request: pytest.FixtureRequest, tmp_path: Path, nodes: int) -> Up:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'velyrix.db'}"
    else:
        url = request.getfixturevalue("pg_server").create_database(f"cap{free_port()}")
    return Up(url, twin_nodes=nodes)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def plane(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Up]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    up = _plane(request, tmp_path, 64)  # ceil(64 x 5%) = 4 spares: 60 usable nodes
    yield up
    up.stop()


def capacity(up: Up, headers: dict[str, str]) -> dict[str, Any]:
    region = up.http.get("/v1/regions/us-east-1", headers=headers).json()
    return next(c for c in region["capacity"] if c["node_type"] == "hgx-h200-8g")


def test_region_capacity_is_the_twins_node_counts_in_every_state(plane: Up) -> None:
    sim_count = len(plane.runtime.sim.nodes)
    cap = capacity(plane, plane.operator)
    spares = math.ceil(sim_count * 0.05)
    assert cap["total_nodes"] == sim_count == 64 and cap["spare_nodes"] == spares  # allocator's rounding (ceil)
    assert cap["available_nodes"] == sim_count - spares and cap["in_use_nodes"] == 0
    assert cap["nodes_by_state"] == {"production": 64, "available": 64}
    other = {"hgx-h100-8g", "hgx-b200-8g"}
    region = plane.http.get("/v1/regions/us-east-1", headers=plane.operator).json()["capacity"]
    assert all(c["total_nodes"] == 0 and c["available_nodes"] == 0 for c in region if c["node_type"] in other)

    cid = plane.http.post("/v1/clusters", headers=plane.tenant, json=CLUSTER).json()["id"]
    plane.wait_phase(cid, "Ready")
    victim = plane.members(cid)[0]["name"]
    with plane.app.state.sessionmaker() as s:  # a node taken out by health (what a verdict does)
        node = s.query(models.Node).filter_by(name=victim).one()
        from velyrix.controlplane.reconcile.store import move

        move(s, node, "quarantined", actor="test", reason="health")
        s.commit()
    plane.runtime.reconciler.settle(30)
    cap = capacity(plane, plane.operator)
    assert cap["total_nodes"] == 64 and cap["in_use_nodes"] == 8
    assert cap["nodes_by_state"]["quarantined"] == 1 and cap["nodes_by_state"]["production"] == 63
    assert cap["available_nodes"] == 64 - 8 - 1 - spares  # the quarantined node is not available
    mine = capacity(plane, plane.tenant)
    assert mine["in_use_nodes"] == 8 and mine["nodes_by_state"] == {}
    with plane.app.state.sessionmaker() as s:
        t = models.Tenant(name="other", display_name="Other")
        s.add(t)
        s.flush()
        theirs = {"Authorization": f"Bearer {principals.issue_key(s, tenant_id=t.id, name='o', role='owner')[1]}"}
        s.commit()
    assert capacity(plane, theirs)["in_use_nodes"] == 0  # another tenant's usage is not disclosed


def test_concurrent_declarations_cannot_all_pass_the_capacity_check(plane: Up) -> None:
    def create(i: int) -> int:
        body = CLUSTER | {"name": f"c{i:02d}"}
        with httpx.Client(base_url=plane.url, timeout=30) as http:
            return http.post("/v1/clusters", headers=plane.tenant, json=body).status_code

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        codes = list(pool.map(create, range(12)))
    created = codes.count(201)
    assert created * 8 <= 60 and created == 7, codes  # 7 x 8 = 56 of the 60 usable nodes
    assert all(c in (201, 409, 503) for c in codes), codes


def _expected(model: dict[str, tuple[str, str, bool]], node_type: str, twin: Any) -> dict[str, Any]:
    """What the region must say for ``node_type``, from the test's own record of where each twin node is."""
    mine = {h: v for h, v in model.items() if twin.nodes[h].node_type == node_type}
    alive = {h: v for h, v in mine.items() if v[0] != "retired"}
    by_state: dict[str, int] = {}
    for stage, prov, _ in alive.values():
        by_state[stage] = by_state.get(stage, 0) + 1
        by_state[prov] = by_state.get(prov, 0) + 1
    spares = math.ceil(len(alive) * 0.05)
    free = sum(1 for st, pr, clustered in alive.values() if st == "production" and pr == "available" and not clustered)
    return {
        "total_nodes": len(alive),
        "spare_nodes": spares,
        "in_use_nodes": sum(1 for v in alive.values() if v[2]),
        "available_nodes": max(0, free - spares),
        "nodes_by_state": dict(sorted(by_state.items())),
    }


# (node index of its type, [(field, state)...]): every fleet stage and provisioning state a node can be in
WALKS = [
    (0, [("fleet_stage", "quarantined")]),
    (1, [("fleet_stage", "quarantined"), ("fleet_stage", "rma")]),
    (2, [("fleet_stage", "quarantined"), ("fleet_stage", "burn-in")]),
    (3, [("fleet_stage", "retired")]),
    (4, [("provisioning_state", "failed")]),
    (5, [("provisioning_state", "inspecting")]),
    (6, [("provisioning_state", "failed"), ("provisioning_state", "sanitizing")]),
    (7, [("provisioning_state", "allocated"), ("provisioning_state", "provisioning")]),
    (8, [("provisioning_state", "failed"), ("provisioning_state", "deprovisioning")]),
    (9, [("fleet_stage", "quarantined"), ("fleet_stage", "production")]),
]


@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_region_capacity_follows_the_twin_node_by_node_through_every_state_and_type(
    db: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from velyrix.controlplane.reconcile.store import move

    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    counts = {"hgx-h200-8g": 20, "hgx-h100-8g": 12, "hgx-b200-8g": 12}
    url = f"sqlite:///{tmp_path / 'velyrix.db'}"
    if db == "postgres":
        url = request.getfixturevalue("pg_server").create_database(f"walk{free_port()}")
    up = Up(url, twin_nodes=0, node_counts=counts)
    try:
        twin = up.runtime.sim
        assert twin is not None
        cid = up.http.post("/v1/clusters", headers=up.tenant, json=CLUSTER).json()["id"]  # 8 H200 nodes
        up.wait_phase(cid, "Ready")
        members = {n["name"] for n in up.members(cid)}
        model = {h: ("production", "active" if h in members else "available", h in members) for h in twin.nodes}
        up.runtime.stop()  # the reconciler must not undo the walk (a failed node would be repaired)

        def check() -> None:
            region = up.http.get("/v1/regions/us-east-1", headers=up.operator).json()["capacity"]
            got = {c["node_type"]: {k: v for k, v in c.items() if k != "node_type"} for c in region}
            for node_type in counts:
                assert got[node_type] == _expected(model, node_type, twin), node_type

        check()
        for node_type in counts:
            free = [h for h, n in twin.nodes.items() if n.node_type == node_type and h not in members]
            for index, steps in WALKS:
                host = free[index]
                for field, state in steps:
                    with up.app.state.sessionmaker() as s:
                        node = s.query(models.Node).filter_by(name=host).one()
                        move(s, node, state, actor="test", reason="walk")
                        s.commit()
                    stage, prov, clustered = model[host]
                    model[host] = (state, prov, clustered) if field == "fleet_stage" else (stage, state, clustered)
                    check()  # after every single move, for every node type
    finally:
        up.stop()
