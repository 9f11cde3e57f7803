"""``/v1/rollouts`` and ``/v1/sim/defects`` on a control plane with a twin: a bad driver shipped through the
API is caught at the staging pod and rolled back; a good one completes; pause, resume and abort follow the
state table; a retried apply returns the same rollout; tenants cannot see rollouts. Every mutation is
audited once (the package's autouse check)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.controlplane.conftest import World, auth
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.fleet import clock
from velyrix.ops.rollouts import running


def body(name: str, version: str) -> dict[str, Any]:
    return {
        "name": name,
        "region": "us-east-1",
        "component": "gpu_driver",
        "version": version,
        "target": {"node_type": "hgx-b200-8g"},
        "stages": ["staging", "canary", "production"],
        "staging_nodes": 2,
        "canary": {"nodes": 2, "soak": "2h"},
        "max_unavailable": 3,
        "window": {"days": ["sat"], "start": "02:00", "hours": 6},
        "notice_hours": 120,
    }


@pytest.fixture(scope="module")
def twin(app: Any, tmp_path_factory: Any) -> Iterator[FleetRuntime]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_FIRMWARE_DIR", str(tmp_path_factory.mktemp("firmware")))
        runtime = FleetRuntime.twin(
            app.app.state.sessionmaker, "us-east-1", node_counts={"hgx-b200-8g": 10}, delays=False
        )
        previous = clock.install(runtime.clock)
        runtime.enroll()
        runtime.attach(app.app)
        yield runtime
        app.app.state.fleet = None
        app.app.state.rollout_world = None
        clock.install(previous)


def _drive(app: Any, twin: FleetRuntime, rollout_id: str) -> str:
    world = app.app.state.rollout_world
    return running.drive(app.app.state.sessionmaker, rollout_id, world, twin.sim.advance, poll_s=60.0)


def test_a_bad_driver_shipped_through_the_api_is_caught_at_staging_and_rolled_back(
    client: Any, world: World, twin: FleetRuntime, app: Any
) -> None:
    ops = auth(world.provider["operator"])
    shipped = client.post(
        "/v1/sim/defects",
        json={"component": "gpu_driver", "version": "580.95.05", "effect": "slow_gemm:0.5"},
        headers=ops,
    )
    assert shipped.status_code == 201, shipped.text
    planned = client.post("/v1/rollouts/plan", json=body("bad-580", "580.95.05"), headers=ops)
    assert planned.status_code == 200, planned.text
    plan = planned.json()
    assert plan["blocks"] == [] and [w["stage"] for w in plan["waves"]][:2] == ["staging", "canary"]
    key = {"Idempotency-Key": "rollout-bad-580"}
    made = client.post("/v1/rollouts", json=body("bad-580", "580.95.05"), headers={**ops, **key})
    again = client.post("/v1/rollouts", json=body("bad-580", "580.95.05"), headers={**ops, **key})
    assert made.status_code == again.status_code == 201 and made.json()["id"] == again.json()["id"]
    assert _drive(app, twin, made.json()["id"]) == "rolled_back"
    status = client.get("/v1/rollouts/bad-580", headers=ops).json()
    assert status["halted_at"]["stage"] == "staging"
    assert len(status["rolled_back_nodes"]) == 2
    assert {n.firmware["driver"] for n in twin.sim.nodes.values()} == {"570.133.20"}
    assert client.get("/v1/rollouts", headers=auth(world.a.keys["owner"])).status_code == 403


def test_a_good_driver_completes_and_pause_resume_abort_follow_the_state_table(
    client: Any, world: World, twin: FleetRuntime, app: Any
) -> None:
    ops = auth(world.provider["operator"])
    made = client.post("/v1/rollouts", json=body("good-580", "580.65.06"), headers=ops)
    assert made.status_code == 201, made.text
    rid = made.json()["id"]
    paused = client.post(f"/v1/rollouts/{rid}/actions", json={"action": "pause"}, headers=ops)
    assert paused.json()["state"] == "paused"
    assert _drive(app, twin, rid) == "paused"  # a paused rollout takes no step
    again = client.post(f"/v1/rollouts/{rid}/actions", json={"action": "pause"}, headers=ops)
    assert again.status_code == 409 and again.json()["code"] == "conflict"
    assert (
        client.post(f"/v1/rollouts/{rid}/actions", json={"action": "resume"}, headers=ops).json()["state"] == "running"
    )
    assert _drive(app, twin, rid) == "completed"
    assert {n.firmware["driver"] for n in twin.sim.nodes.values()} == {"580.65.06"}
    done = client.post(f"/v1/rollouts/{rid}/actions", json={"action": "abort"}, headers=ops)
    assert done.status_code == 409
