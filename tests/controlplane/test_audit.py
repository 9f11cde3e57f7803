"""Audit events: one per mutation attempt (also refused ones), with who/what/where, readable by the
tenant, and immutable: no API route changes them and the database refuses UPDATE and DELETE."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from tests.controlplane.conftest import World, auth, cluster_body, unique
from velyrix.controlplane.db import models


def _events(client: Any, key: str, **params: Any) -> list[dict[str, Any]]:
    return client.get("/v1/audit-events", params=params, headers=auth(key)).json()["items"]


def test_successful_mutation_is_recorded_with_actor_target_request_and_source(client: Any, world: World) -> None:
    resp = client.post("/v1/clusters", json=cluster_body(unique("aud")), headers=auth(world.a.keys["member"]))
    assert resp.status_code == 201
    (event,) = _events(client, world.a.keys["owner"], request_id=resp.headers["X-Request-ID"])
    assert event["action"] == "clusters.create" and event["outcome"] == "success"
    assert event["target"] == f"clusters/{resp.json()['id']}"
    assert event["key_id"] == world.a.key_ids["member"] and event["tenant_id"] == world.a.tenant_id
    assert event["source_address"] and event["status_code"] == 201 and event["at"]


@pytest.mark.parametrize(("who", "status", "code"), [("viewer", 403, "forbidden"), ("none", 401, "unauthenticated")])
def test_refused_mutation_is_recorded(client: Any, world: World, who: str, status: int, code: str) -> None:
    headers = auth(world.a.keys[who]) if who != "none" else {}
    resp = client.post("/v1/clusters", json=cluster_body(unique("no")), headers=headers)
    assert resp.status_code == status
    with world.session() as s:
        (event,) = s.execute(
            sa.select(models.AuditEvent).where(models.AuditEvent.request_id == resp.headers["X-Request-ID"])
        ).scalars()
    assert (event.outcome, event.status_code, event.error_code) == ("denied", status, code)
    assert event.key_id == (world.a.key_ids[who] if who != "none" else None)


def test_failed_validation_is_recorded_and_the_change_is_not(client: Any, world: World) -> None:
    body = cluster_body(unique("bad")) | {"node_type": "hgx-h20-8g"}
    resp = client.post("/v1/clusters", json=body, headers=auth(world.a.keys["member"]))
    assert resp.status_code == 422 and resp.json()["diagnostics"][0]["suggestion"] == "hgx-h200-8g"
    (event,) = _events(client, world.a.keys["owner"], request_id=resp.headers["X-Request-ID"])
    assert event["outcome"] == "denied" and event["error_code"] == "spec_invalid"
    assert (
        client.get("/v1/clusters", params={"name": body["name"]}, headers=auth(world.a.keys["owner"])).json()["items"]
        == []
    )


def test_tenants_read_only_their_events_and_auditors_read_all(client: Any, world: World) -> None:
    client.post(
        "/v1/volumes",
        json={"name": unique("v"), "region": "us-east-1", "tier": "object", "size_tb": 1},
        headers=auth(world.b.keys["owner"]),
    )
    mine = _events(client, world.a.keys["owner"], limit=200)
    assert mine and {e["tenant_id"] for e in mine} == {world.a.tenant_id}
    everything = client.get("/v1/audit-events", params={"limit": 200}, headers=auth(world.provider["auditor"]))
    tenants = {e["tenant_id"] for e in everything.json()["items"]}
    assert {world.a.tenant_id, world.b.tenant_id} <= tenants


def test_the_api_cannot_change_or_delete_an_event(client: Any, world: World) -> None:
    event_id = world.audit_event(world.a)
    for method in ("DELETE", "PUT", "PATCH"):
        resp = client.request(method, f"/v1/audit-events/{event_id}", headers=auth(world.a.keys["owner"]), json={})
        assert resp.status_code == 405 and resp.headers["content-type"] == "application/problem+json"


def test_the_database_refuses_update_and_delete_of_events(world: World) -> None:
    event_id = world.audit_event(world.a)
    for stmt in (
        sa.update(models.AuditEvent).where(models.AuditEvent.id == event_id).values(outcome="forged"),
        sa.delete(models.AuditEvent).where(models.AuditEvent.id == event_id),
    ):
        with world.session() as s, pytest.raises(sa.exc.DatabaseError, match="append-only"):
            s.execute(stmt)
            s.commit()
    with world.session() as s:
        assert s.get(models.AuditEvent, event_id).outcome == "success"
