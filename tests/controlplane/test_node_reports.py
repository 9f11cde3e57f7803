"""Node agents' credentials and reports on SQLite and PostgreSQL: the token is shown once and only its hash
kept, it reports for its own node only and opens nothing else, rotation revokes it, bad verdicts answer 422,
and evidence of an RMA criterion (XID 64) moves the node (recorded) and files the RMA: the server judges the
evidence, the agent's verdict is a typed claim beside it."""

from __future__ import annotations

from typing import Any

from tests.controlplane.conftest import World, auth, unique
from velyrix.controlplane.auth import keys


def report(
    hostname: str, verdict: dict[str, Any] | None = None, xids: list[tuple[int, float, int]] = ()
) -> dict[str, Any]:
    """A report whose evidence holds 8 clean GPUs plus ``xids`` as (gpu, t_s, code), and the claimed ``verdict``."""
    gpus = [{"index": i, "uuid": f"GPU-{i}", "xid_events": [[t, c] for g, t, c in xids if g == i]} for i in range(8)]
    sample: dict[str, Any] = {"hostname": hostname, "gpus": gpus}
    body = {"hostname": hostname, "collected_at_s": 1000.0, "up": True, "problems": [], "sample": sample}
    return body | ({"verdict": verdict} if verdict is not None else {})


HEALTHY = {"level": "ok", "action": "IGNORE", "reasons": []}


def register(client: Any, world: World, **extra: Any) -> dict[str, Any]:
    body = {"name": unique("gpu"), "region": "us-east-1", "node_type": "hgx-h200-8g"}
    resp = client.post("/v1/nodes", json=body, headers=auth(world.provider["operator"]) | extra)
    assert resp.status_code == 201, resp.text
    return resp.json()  # type: ignore[no-any-return]


def test_registered_node_starts_burn_in_and_gets_its_token_once(client: Any, world: World) -> None:
    headers = {"Idempotency-Key": unique("idem")}
    node = register(client, world, **headers)
    assert node["provisioning_state"] == "enrolled" and node["fleet_stage"] == "burn-in"
    token = node["node_token"]
    assert token.startswith(keys.NODE_PREFIX) and keys.looks_valid(token, keys.NODE_PREFIX)
    assert not keys.looks_valid(token)  # never an API key
    from velyrix.controlplane.db import health_tables

    with world.session() as s:
        (cred,) = s.query(health_tables.NodeCredential).filter_by(node_id=node["id"]).all()
        assert cred.secret_sha256 == keys.digest(token) and token not in str(vars(cred))
    again = client.get(f"/v1/nodes/{node['id']}", headers=auth(world.provider["operator"])).json()
    assert "node_token" not in again
    retry = client.post(
        "/v1/nodes",
        json={"name": node["name"], "region": "us-east-1", "node_type": "hgx-h200-8g"},
        headers=auth(world.provider["operator"]) | headers,
    )
    assert retry.status_code == 409 and retry.json()["code"] == "secret_not_replayable"


def test_node_token_reports_for_its_own_node_only_and_reads_nothing(client: Any, world: World) -> None:
    mine, other = register(client, world), register(client, world)
    token = mine["node_token"]
    ok = client.post(f"/v1/nodes/{mine['name']}/reports", json=report(mine["name"], HEALTHY), headers=auth(token))
    assert ok.status_code == 200, ok.text
    assert ok.json()["health_action"] == "IGNORE" and ok.json()["reports"] == 1
    theirs = client.post(f"/v1/nodes/{other['name']}/reports", json=report(other["name"]), headers=auth(token))
    assert theirs.status_code == 403 and theirs.json()["code"] == "forbidden"
    for path in ("/v1/clusters", "/v1/nodes", f"/v1/nodes/{mine['id']}", "/v1/audit-events"):
        assert client.get(path, headers=auth(token)).status_code == 403, path
    operator = client.post(
        f"/v1/nodes/{mine['name']}/reports", json=report(mine["name"]), headers=auth(world.provider["operator"])
    )
    assert operator.status_code == 403  # an API key is no node credential
    mismatch = client.post(f"/v1/nodes/{mine['name']}/reports", json=report(other["name"]), headers=auth(token))
    assert mismatch.status_code == 422 and mismatch.json()["code"] == "invalid_input"
    bad = report(mine["name"], {"level": "warn", "action": "QUARANTIN", "reasons": []})
    wrong = client.post(f"/v1/nodes/{mine['name']}/reports", json=bad, headers=auth(token))
    assert wrong.status_code == 422 and "QUARANTINE" in wrong.text  # the closest valid rung is named
    reason = {"key": "xid:64:gpu3", "source": "xid", "message": "", "level": "fatal", "action": "QUARANTINE"}
    empty = report(mine["name"], {"level": "fatal", "action": "QUARANTINE", "reasons": [reason]})
    assert client.post(f"/v1/nodes/{mine['name']}/reports", json=empty, headers=auth(token)).status_code == 422
    forged = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert (
        client.post(f"/v1/nodes/{mine['name']}/reports", json=report(mine["name"]), headers=auth(forged)).status_code
        == 401
    )


def test_rotation_revokes_the_old_token_on_its_next_request(client: Any, world: World) -> None:
    node = register(client, world)
    old = node["node_token"]
    assert client.post(f"/v1/nodes/{node['id']}/credentials", headers=auth(world.a.keys["owner"])).status_code == 403
    rotated = client.post(f"/v1/nodes/{node['id']}/credentials", headers=auth(world.provider["operator"]))
    assert rotated.status_code == 201 and rotated.json()["prefix"] == rotated.json()["node_token"][:13]
    new = rotated.json()["node_token"]
    body = report(node["name"], HEALTHY)
    assert client.post(f"/v1/nodes/{node['name']}/reports", json=body, headers=auth(old)).status_code == 401
    assert client.post(f"/v1/nodes/{node['name']}/reports", json=body, headers=auth(new)).status_code == 200


def test_tenant_reads_the_last_report_of_its_node(client: Any, world: World) -> None:
    node_id = world.node(world.a, world.cluster(world.a))
    rotated = client.post(f"/v1/nodes/{node_id}/credentials", headers=auth(world.provider["operator"])).json()
    for n in (1, 2):
        resp = client.post(
            f"/v1/nodes/{rotated['hostname']}/reports",
            json=report(rotated["hostname"], HEALTHY),
            headers=auth(rotated["node_token"]),
        )
        assert resp.json()["reports"] == n
    last = client.get(f"/v1/nodes/{node_id}/report", headers=auth(world.a.keys["viewer"]))
    assert last.status_code == 200 and last.json()["reports"] == 2 and last.json()["health_level"] == 0
    assert client.get(f"/v1/nodes/{node_id}/report", headers=auth(world.b.keys["viewer"])).status_code == 404


def test_reported_rma_criterion_quarantines_the_node_and_files_the_rma(client: Any, world: World) -> None:
    from velyrix.controlplane.db import models

    node = register(client, world)
    with world.session() as s:  # intake passed: a production node, free
        row = s.get(models.Node, node["id"])
        row.fleet_stage, row.provisioning_state, row.hardware = "production", "available", {"serial": "SN-77"}
        s.commit()
    body = report(node["name"], HEALTHY, xids=[(3, 990.0, 64)])  # the agent claims healthy: not believed
    first = client.post(f"/v1/nodes/{node['name']}/reports", json=body, headers=auth(node["node_token"]))
    assert first.status_code == 200, first.text
    assert first.json()["actions"] == [f"drain {node['name']}", f"quarantine {node['name']}", f"rma {node['name']}"]
    assert first.json()["health_action"] == "QUARANTINE" and first.json()["agent_action"] == "IGNORE"
    events = client.get(f"/v1/nodes/{node['id']}/events", headers=auth(world.provider["operator"])).json()["items"]
    assert [e["reason"] for e in events] == ["AgentDisagrees", "HealthAction"]
    assert "claims IGNORE" in events[0]["message"] and events[0]["server_action"] == "QUARANTINE"
    again = client.post(f"/v1/nodes/{node['name']}/reports", json=body, headers=auth(node["node_token"]))
    assert again.json()["actions"] == []  # nothing left to do: no second RMA
    got = client.get(f"/v1/nodes/{node['id']}", headers=auth(world.provider["operator"])).json()
    assert got["fleet_stage"] == "rma" and got["last_error"].startswith("health: xid:64:gpu3")
    rma = client.get("/v1/rma-records", params={"node_id": node["id"]}, headers=auth(world.provider["operator"]))
    (record,) = rma.json()["items"]
    assert record["serial"] == "SN-77" and record["reasons"] == ["xid:64:gpu3"]
    with world.session() as s:
        moves = [
            (t.from_state, t.to_state, t.actor)
            for t in s.query(models.NodeTransition).filter_by(node_id=node["id"]).order_by(models.NodeTransition.at)
        ]
    assert moves == [("production", "quarantined", "health"), ("quarantined", "rma", "health")]
    audit = client.get(
        "/v1/audit-events", params={"target": f"nodes/{node['id']}/reports"}, headers=auth(world.provider["auditor"])
    ).json()["items"]
    assert (
        len(audit) == 2
        and audit[0]["action"] == "nodes.report"
        and audit[0]["actor"].endswith(f"(node:{node['name']})")
        and audit[0]["detail"]["actions"][1] == f"quarantine {node['name']}"
    )


def test_sim_routes_answer_no_twin_without_one(client: Any, world: World) -> None:
    resp = client.post(
        "/v1/sim/faults",
        json={"node": "use1-h200-su00-n00", "kind": "xid", "xid": 79},
        headers=auth(world.provider["operator"]),
    )
    assert resp.status_code == 409 and resp.json()["code"] == "no_twin" and "velyrix up" in resp.json()["hint"]


def test_report_that_loses_a_race_answers_503_busy_and_keeps_nothing(client: Any, world: World, app: Any) -> None:
    from sqlalchemy import orm

    node = register(client, world)

    def racing(session: Any, row: Any, judgement: Any) -> list[str]:
        raise orm.exc.StaleDataError("UPDATE statement on table 'cluster_work' expected to update 1 row(s); 0 were")

    app.app.state.report_handler, saved = racing, app.app.state.report_handler
    try:
        resp = client.post(
            f"/v1/nodes/{node['name']}/reports",
            json=report(node["name"], None, xids=[(0, 990.0, 64)]),
            headers=auth(node["node_token"]),
        )
    finally:
        app.app.state.report_handler = saved
    assert resp.status_code == 503 and resp.json()["code"] == "busy"
    assert client.get(f"/v1/nodes/{node['id']}/report", headers=auth(world.provider["operator"])).status_code == 404


def test_the_service_mounts_the_twin_routes_which_answer_no_twin_without_one(client: Any, world: World) -> None:
    """The composition root (``velyrix.ops.service.create_app``) mounts the twin's node telemetry and proactive
    report; on a control plane without a twin they answer 409 ``no_twin`` like the other ``/v1/sim`` routes."""
    node = register(client, world)
    telemetry = client.get(f"/v1/sim/nodes/{node['name']}/telemetry", headers=auth(node["node_token"]))
    assert telemetry.status_code == 409 and telemetry.json()["code"] == "no_twin", telemetry.text
    foreign = client.get("/v1/sim/nodes/use1-h200-su00-n00/telemetry", headers=auth(node["node_token"]))
    assert foreign.status_code == 403 and foreign.json()["code"] == "forbidden"
    proactive = client.get("/v1/sim/proactive", headers=auth(world.provider["operator"]))
    assert proactive.status_code == 409 and proactive.json()["code"] == "no_twin"
