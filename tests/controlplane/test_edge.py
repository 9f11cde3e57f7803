"""The API's validation edge on SQLite and PostgreSQL (issue 22's defects): nothing is stored that cannot
be read back, limits hold before authentication, NUL bytes and crafted cursors answer 4xx, refused
mutations keep their audit event, 405 names the allowed methods."""

from __future__ import annotations

import base64
import json
import socket
from typing import Any

import pytest
import sqlalchemy as sa

from tests.controlplane.conftest import World, auth, cluster_body, unique
from tests.controlplane.test_node_reports import register, report
from velyrix.controlplane.db import models


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


def raw(client: Any, method: str, path: str, body: str, key: str | None) -> Any:
    headers = {"Content-Type": "application/json"} | (auth(key) if key else {})
    return client.request(method, path, content=body.encode("utf-8", "surrogatepass"), headers=headers)


@pytest.fixture(scope="module")
def node(client: Any, world: World) -> dict[str, Any]:
    return register(client, world)


def _still_readable(client: Any, world: World, node: dict[str, Any]) -> dict[str, Any]:
    op = auth(world.provider["operator"])
    got = client.get(f"/v1/nodes/{node['id']}", headers=op)
    assert got.status_code == 200, got.text
    listed = client.get("/v1/nodes", params={"limit": 200}, headers=op)
    assert listed.status_code == 200, listed.text
    return got.json()  # type: ignore[no-any-return]


def test_hardware_nested_256_deep_is_refused_and_the_node_still_reads(client: Any, world: World, node: Any) -> None:
    resp = client.patch(
        f"/v1/nodes/{node['id']}", json={"hardware": nested(256)}, headers=auth(world.provider["operator"])
    )
    assert resp.status_code == 422 and resp.json()["code"] == "too_deep", resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    assert _still_readable(client, world, node)["hardware"] == {}


@pytest.mark.parametrize("text", ["\\ud800", "\\udfff", "a\\u0000b", "\\ud83d"])
def test_labels_with_lone_surrogates_or_nul_are_refused(client: Any, world: World, node: Any, text: str) -> None:
    body = '{"labels": {"rack": "' + text + '"}}'
    resp = raw(client, "PATCH", f"/v1/nodes/{node['id']}", body, world.provider["operator"])
    assert resp.status_code == 422 and resp.json()["code"] == "invalid_character", resp.text
    assert _still_readable(client, world, node)["labels"] == {}


def test_a_valid_surrogate_pair_is_one_character_and_reads_back(client: Any, world: World) -> None:
    mine = register(client, world)
    body = '{"labels": {"mood": "\\ud83d\\ude00"}}'
    resp = raw(client, "PATCH", f"/v1/nodes/{mine['id']}", body, world.provider["operator"])
    assert resp.status_code == 200, resp.text
    assert _still_readable(client, world, mine)["labels"] == {"mood": "\U0001f600"}


@pytest.mark.parametrize(
    "sample",
    [nested(300), {"note": "\ud83d"}, {"x": float("nan")}, {"x": float("inf")}],
    ids=["depth-300", "lone-surrogate", "nan", "infinity"],
)
def test_reports_that_could_not_be_read_back_are_refused(client: Any, world: World, sample: Any) -> None:
    mine = register(client, world)
    body = report(mine["name"]) | {"sample": sample}
    text = json.dumps(body, allow_nan=True, ensure_ascii=True)
    resp = raw(client, "POST", f"/v1/nodes/{mine['name']}/reports", text, mine["node_token"])
    assert 400 <= resp.status_code < 500, resp.text
    page = client.get(f"/v1/nodes/{mine['id']}/report", headers=auth(world.provider["operator"]))
    assert page.status_code == 404, page.text  # nothing stored: the node has not reported


@pytest.mark.parametrize(
    "path",
    [
        "/v1/nodes?name=a%00b",
        "/v1/nodes?region=us%00east",
        "/v1/nodes/nod_%00x",
        "/v1/clusters/clu%00",
        "/v1/clusters?cursor=%00",
        "/v1/audit-events?request_id=x%00",
        "/v1/nodes?n%00ame=x",
    ],
)
def test_nul_bytes_in_query_path_and_cursor_answer_422(client: Any, world: World, path: str) -> None:
    resp = client.get(path, headers=auth(world.provider["operator"]))
    assert resp.status_code == 422 and resp.json()["code"] == "invalid_character", resp.text


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        _b64(b'{"after":"\\ud800"}'),
        _b64(b'{"after":"\\u0000"}'),
        _b64(b'{"after":["x"]}'),
        _b64(b'{"after":"' + b"a" * 300 + b'"}'),
        _b64(b"[1]"),
        _b64(b"\xff\xfe"),
        "!!!",
    ],
)
def test_crafted_cursors_answer_422(client: Any, world: World, cursor: str) -> None:
    for key in (world.a.keys["viewer"], world.provider["operator"]):
        resp = client.get("/v1/clusters", params={"cursor": cursor}, headers=auth(key))
        assert resp.status_code == 422 and resp.json()["code"] in ("invalid_input", "invalid_request"), resp.text


def test_issued_cursors_still_page(client: Any, world: World) -> None:
    for _ in range(3):
        world.volume(world.a)
    first = client.get("/v1/volumes", params={"limit": 2}, headers=auth(world.a.keys["viewer"])).json()
    nxt = client.get(
        "/v1/volumes", params={"limit": 2, "cursor": first["next_cursor"]}, headers=auth(world.a.keys["viewer"])
    )
    assert nxt.status_code == 200 and nxt.json()["items"][0]["id"] > first["items"][-1]["id"]


@pytest.mark.parametrize(
    "number", ["1e308", "1e400", "-1e400", "NaN", "Infinity", "9007199254740993", "99999999999999999999999"]
)
def test_non_finite_and_huge_numbers_are_refused(client: Any, world: World, number: str) -> None:
    body = json.dumps(cluster_body(unique("num"))).replace('"parallel_fs_tb": 100', f'"parallel_fs_tb": {number}')
    resp = raw(client, "POST", "/v1/clusters", body, world.a.keys["member"])
    assert resp.status_code == 422, resp.text
    assert resp.json()["code"] in ("spec_invalid", "number_out_of_range", "non_finite_number", "invalid_json")


def test_storage_has_an_upper_bound(client: Any, world: World) -> None:
    body = cluster_body(unique("big")) | {"storage": {"parallel_fs_tb": 1e12}}
    resp = client.post("/v1/clusters", json=body, headers=auth(world.a.keys["member"]))
    assert resp.status_code == 422 and "parallel_fs_tb" in resp.json()["detail"], resp.text


def test_duplicate_keys_are_refused(client: Any, world: World, node: Any) -> None:
    body = '{"labels": {"a": "1", "a": "2"}}'
    resp = raw(client, "PATCH", f"/v1/nodes/{node['id']}", body, world.provider["operator"])
    assert resp.status_code == 422 and resp.json()["code"] == "duplicate_key"


def test_a_50_mb_label_patch_is_refused_unread(client: Any, world: World, node: Any) -> None:
    body = '{"labels": {"a": "' + "x" * (50 * 1024 * 1024) + '"}}'
    resp = raw(client, "PATCH", f"/v1/nodes/{node['id']}", body, world.provider["operator"])
    assert resp.status_code == 413 and resp.json()["code"] == "payload_too_large"
    assert _still_readable(client, world, node)["labels"] == {}


def test_a_50_mb_report_is_refused(client: Any, world: World) -> None:
    mine = register(client, world)
    body = json.dumps(report(mine["name"]) | {"sample": {"blob": "x" * (50 * 1024 * 1024)}})
    resp = raw(client, "POST", f"/v1/nodes/{mine['name']}/reports", body, mine["node_token"])
    assert resp.status_code == 413


def test_a_20_mb_unauthenticated_body_is_refused_before_the_key_check(client: Any) -> None:
    resp = raw(client, "POST", "/v1/clusters", '{"name": "' + "x" * (20 * 1024 * 1024) + '"}', None)
    assert resp.status_code == 413, resp.text


def test_long_strings_are_refused(client: Any, world: World, node: Any) -> None:
    resp = client.patch(
        f"/v1/nodes/{node['id']}", json={"labels": {"a": "x" * 20_000}}, headers=auth(world.provider["operator"])
    )
    assert resp.status_code == 422 and resp.json()["code"] == "value_too_long"


def _read_answer(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def test_a_body_shorter_than_its_content_length_does_not_hold_the_connection(
    app: Any, live_url: str, world: World
) -> None:
    app.app.state.body_timeout_s = 0.3
    host, port = live_url.removeprefix("http://").split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(
                b"POST /v1/clusters HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b'Content-Length: 1000\r\n\r\n{"name":'
            )
            answer = _read_answer(sock)
    finally:
        del app.app.state.body_timeout_s
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]


def test_the_limit_is_enforced_on_the_bytes_when_content_length_is_absent(app: Any, live_url: str) -> None:
    host, port = live_url.removeprefix("http://").split(":")
    chunk = b"x" * 65536
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST /v1/clusters HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(4):
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        except OSError:  # the server answered and closed while we were still sending
            pass
        answer = _read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/v1/clusters/" + "c" * 300), ("DELETE", "/v1/volumes/vol%00x"), ("PATCH", "/v1/nodes/a%00")],
)
def test_refused_mutations_with_long_or_nul_paths_keep_their_audit_event(
    client: Any, world: World, method: str, path: str
) -> None:
    resp = client.request(method, path, json={}, headers=auth(world.a.keys["owner"]))
    assert 400 <= resp.status_code < 500
    # the autouse fixture of conftest.py checks the one audit event of this refused mutation


def test_insert_or_replace_cannot_overwrite_an_audit_event(world: World) -> None:
    event_id = world.audit_event(world.a)
    with world.session() as s:
        if s.bind.dialect.name == "sqlite":
            stmt = sa.text(
                "INSERT OR REPLACE INTO audit_events (id, at, actor, action, target, request_id, outcome, "
                "status_code, detail) VALUES (:id, '2026-01-01', 'forger', 'x', 'x', 'x', 'success', 200, '{}')"
            )
        else:
            stmt = sa.text(
                "INSERT INTO audit_events (id, at, actor, action, target, request_id, outcome, status_code, detail) "
                "VALUES (:id, now(), 'forger', 'x', 'x', 'x', 'success', 200, '{}') "
                "ON CONFLICT (id) DO UPDATE SET actor = 'forger'"
            )
        with pytest.raises(sa.exc.DatabaseError):
            s.execute(stmt, {"id": event_id})
            s.commit()
    with world.session() as s:
        assert s.get(models.AuditEvent, event_id).actor != "forger"


def test_405_names_the_allowed_methods(client: Any, world: World) -> None:
    resp = client.request("PUT", "/v1/volumes", headers=auth(world.a.keys["owner"]))
    assert resp.status_code == 405 and resp.json()["code"] == "method_not_allowed"
    assert set(resp.headers["Allow"].replace(" ", "").split(",")) == {"GET", "POST"}


def test_answers_hold_no_nan_or_infinity(client: Any, world: World) -> None:
    resp = client.post("/v1/clusters", json=cluster_body(unique("fin")), headers=auth(world.a.keys["member"]))
    assert resp.status_code == 201, resp.text
    json.loads(resp.text, parse_constant=lambda c: pytest.fail(f"{c} in an answer"))
