"""Physical-access ingest (``POST /v1/physical-access/events``): only the physical-access role's keys post;
bad input answers a stable 4xx code and records nothing but the refusal; accepted events are audit
events, leaves of the log with a verifying inclusion proof, and OCSF Authentication events."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.controlplane.conftest import World, auth, unique
from velyrix.controlplane.audit import merkle, ocsf


def _event(**over: Any) -> dict[str, Any]:
    body = {
        "kind": "access_denied",
        "site": "use1-dc2",
        "door": "cage-07/a",
        "occurred_at": dt.datetime.now(dt.UTC).isoformat(),
        "reader_event_id": unique("lenel-4711"),
        "badge_id": "B-00231",
        "person": "Jo Tech",
    }
    return body | over


def test_a_badge_read_becomes_an_audit_event_with_a_proof_and_an_ocsf_authentication(client: Any, world: World) -> None:
    resp = client.post("/v1/physical-access/events", json=_event(), headers=auth(world.provider["physical-access"]))
    assert resp.status_code == 201, resp.text
    event_id = resp.json()["audit_event_id"]
    auditor = auth(world.provider["auditor"])
    event = client.get(f"/v1/audit-events/{event_id}", headers=auditor).json()
    assert event["action"] == "physical.access_denied" and event["target"] == "sites/use1-dc2/doors/cage-07/a"
    assert event["outcome"] == "denied" and event["detail"]["badge_id"] == "B-00231"
    assert event["key_id"] == world.provider_key_ids["physical-access"]
    proof = client.get(f"/v1/audit-log/proofs/inclusion/{event_id}", headers=auditor)
    assert proof.status_code == 200, proof.text
    body = proof.json()
    root = bytes.fromhex(body["checkpoint"]["report"]["root_hash"])
    path = [bytes.fromhex(h) for h in body["audit_path"]]
    assert merkle.verify_inclusion(body["leaf_index"], body["tree_size"], bytes.fromhex(body["leaf_hash"]), path, root)
    as_ocsf = ocsf.to_ocsf({"index": body["leaf_index"], "event": body["event"]}, "0.1.0")
    assert as_ocsf["class_uid"] == 3002 and as_ocsf["status"] == "Failure"
    assert as_ocsf["user"] == {"name": "Jo Tech", "uid": "B-00231"} and as_ocsf["dst_endpoint"]["name"] == "cage-07/a"


def test_a_forced_door_is_high_severity(client: Any, world: World) -> None:
    body = _event(kind="door_forced", badge_id=None, person=None)
    resp = client.post("/v1/physical-access/events", json=body, headers=auth(world.provider["physical-access"]))
    assert resp.status_code == 201, resp.text
    event = client.get(f"/v1/audit-events/{resp.json()['audit_event_id']}", headers=auth(world.provider["auditor"]))
    as_ocsf = ocsf.to_ocsf({"index": 0, "event": event.json() | {"at": "2026-12-01T10:00:00.000000Z"}}, "0.1.0")
    assert (as_ocsf["activity_id"], as_ocsf["severity"]) == (99, "High")


@pytest.mark.parametrize("who", ["operator", "auditor"])
def test_other_provider_keys_cannot_post_or_mint_a_physical_key(client: Any, world: World, who: str) -> None:
    resp = client.post("/v1/physical-access/events", json=_event(), headers=auth(world.provider[who]))
    assert resp.status_code == 403 and resp.json()["code"] == "forbidden"
    minted = client.post(
        "/v1/api-keys", json={"name": unique("badge"), "role": "physical-access"}, headers=auth(world.provider[who])
    )
    assert minted.status_code == 403, minted.text


def test_a_physical_key_reads_nothing(client: Any, world: World) -> None:
    key = auth(world.provider["physical-access"])
    assert client.get("/v1/audit-events", headers=key).status_code == 403
    assert client.get("/v1/nodes", headers=key).status_code == 403


@pytest.mark.parametrize(
    ("over", "code"),
    [
        ({"kind": "door_exploded"}, "invalid_request"),
        ({"site": "USE1 DC2"}, "invalid_request"),
        ({"door": "x" * 129}, "invalid_request"),
        ({"person": "p" * 129}, "invalid_request"),
        ({"extra": 1}, "invalid_request"),
        ({"occurred_at": "2026-12-01T10:00:00"}, "invalid_input"),  # no UTC offset
        ({"occurred_at": "2020-01-01T00:00:00Z"}, "invalid_input"),  # older than 30 days
        ({"occurred_at": (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()}, "invalid_input"),
    ],
)
def test_bad_input_answers_422_with_a_stable_code(client: Any, world: World, over: dict[str, Any], code: str) -> None:
    resp = client.post(
        "/v1/physical-access/events", json=_event(**over), headers=auth(world.provider["physical-access"])
    )
    assert resp.status_code == 422 and resp.json()["code"] == code, resp.text


def test_an_oversized_body_is_refused_before_parsing(client: Any, world: World) -> None:
    resp = client.post(
        "/v1/physical-access/events",
        content=b'{"person": "' + b"p" * (70 * 1024) + b'"}',
        headers=auth(world.provider["physical-access"]) | {"Content-Type": "application/json"},
    )
    assert resp.status_code == 413 and resp.json()["code"] == "payload_too_large", resp.text
