"""Fuzzing the API on SQLite and PostgreSQL (issue 22): every top-level body field of every mutating
operation of /openapi.json gets hand-written hostile values (NUL, lone surrogates, 1e308, 1e400, NaN,
Infinity, huge integers, depth 10,000, 70 kB strings, 50 MB bodies, bad cursors), and hypothesis
sends arbitrary JSON (any unicode, any nesting) as node inventory and labels. Zero 5xx; whatever was
accepted reads back equal, and every stored object stays within the edge's limits (docs/api-limits.md).
Every response of this module stays under the response cap (``response_cap.MAX_RESPONSE_BYTES``); list
pages over it are cut, and cursors still reach every item once.
Run time: a few seconds per backend (examples per operation below).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.controlplane import cmk_tenant
from tests.controlplane.conftest import World, auth, cluster_body, unique
from tests.controlplane.test_authorization_matrix import billing_object
from tests.controlplane.test_node_reports import register, report
from velyrix.controlplane.api import edge, response_cap

HOSTILE: list[str] = [
    '"\\u0000"',
    '"a\\u0000b"',
    '"\\ud800"',
    '"\\udfff x"',
    '"\\ud83d"',
    "1e308",
    "-1e308",
    "1e400",
    "NaN",
    "Infinity",
    "-Infinity",
    "123456789012345678901234567890",
    "[" * 10_000 + "]" * 10_000,
    '{"a":' * 300 + "1" + "}" * 300,
    json.dumps("x" * 70_000),
    '"[/]"',
    '"[blink]infiniband[/blink]"',
    "null",
    "{}",
    "[]",
    "true",
    "-1",
]
BAD_CURSORS = ["%00", "x", "clu_", "AAAA", "eyJhZnRlciI6Ilx1ZDgwMCJ9", "a" * 600, "clu_zz"]
EXAMPLES = 40


@pytest.fixture(autouse=True)
def responses_under_the_cap(client: Any) -> Iterator[list[int]]:
    """Sizes (bytes) of every response a test got; each must stay under the documented cap."""
    sizes: list[int] = []

    def measure(resp: Any) -> None:
        resp.read()
        sizes.append(len(resp.content))

    client.event_hooks["response"].append(measure)
    try:
        yield sizes
    finally:
        client.event_hooks["response"].remove(measure)
    assert sizes and max(sizes) <= response_cap.MAX_RESPONSE_BYTES, max(sizes, default=0)


def _operations(client: Any, world: World) -> list[tuple[str, str, dict[str, Any], str]]:
    """(method, path with real ids, a valid body, key) for every mutating operation with a JSON body."""
    spec = client.get("/openapi.json").json()
    node = register(client, world)
    ids = {
        "cluster_id": world.cluster(world.a),
        "volume_id": world.volume(world.a),
        "node_id": node["id"],
        "tenant_id": world.a.tenant_id,
        "hostname": node["name"],
        "key_id": world.key(world.a, "viewer")[0],  # a key of its own: rotating it harms no other test
        "incident_id": billing_object(world, world.a, "incident_id"),
        "cmk_id": cmk_tenant.customer_key(world, world.a),
        "user_id": "usr_fuzz",  # none such: the body is still validated before the lookup answers 404
        "rollout_id": "rol_fuzz",  # none such: the body is still validated before the lookup answers 404
    }
    bodies: dict[str, dict[str, Any]] = {
        "/v1/clusters": cluster_body(unique("fz")),
        "/v1/clusters/{cluster_id}": cluster_body(unique("fz")),
        "/v1/volumes": {"name": unique("fz"), "region": "us-east-1", "tier": "object", "size_tb": 1},
        "/v1/nodes": {"name": unique("fz"), "region": "us-east-1", "node_type": "hgx-h200-8g"},
        "/v1/nodes/{hostname}/reports": report(node["name"]),
        "/v1/tenants": {"name": unique("fz"), "display_name": "x"},
        "/v1/api-keys": {"name": unique("fz"), "role": "viewer"},
    }
    out = []
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            if method.upper() not in ("POST", "PUT", "PATCH") or "requestBody" not in op:
                continue
            concrete = path.format(**ids)
            provider = path.startswith(
                ("/v1/nodes", "/v1/tenants", "/v1/sim", "/v1/incidents", "/v1/contracts", "/v1/rollouts")
            )
            if path == "/v1/nodes/{hostname}/reports":
                key = node["node_token"]
            else:
                key = world.provider["operator"] if provider else world.a.keys["owner"]
            out.append((method.upper(), concrete, bodies.get(path, {}), key))
    return out


def _fields(client: Any, method: str, path: str, body: dict[str, Any]) -> list[str]:
    return sorted(body) or ["labels", "hardware", "display_name", "size_tb", "delete_volumes", "node"]


def test_hostile_values_in_every_body_field_never_answer_5xx(client: Any, world: World) -> None:
    statuses: dict[int, int] = {}
    for method, path, body, key in _operations(client, world):
        for field in _fields(client, method, path, body):
            for value in HOSTILE:
                rest = {k: v for k, v in body.items() if k != field}
                raw = json.dumps(rest)[:-1] + ("," if rest else "") + f"{json.dumps(field)}: {value}}}"
                resp = client.request(
                    method, path, content=raw.encode(), headers={**auth(key), "Content-Type": "application/json"}
                )
                statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1
                assert resp.status_code < 500, (method, path, field, value[:60], resp.text[:300])
        big = client.request(method, path, content=b'{"x": "' + b"x" * (50 * 1024 * 1024) + b'"}', headers=auth(key))
        assert big.status_code == 413, (method, path)
    assert sum(statuses.values()) > 500 and any(200 <= s < 300 for s in statuses), statuses


@pytest.mark.parametrize("cursor", BAD_CURSORS)
def test_bad_cursors_answer_4xx_on_every_list(client: Any, world: World, cursor: str) -> None:
    spec = client.get("/openapi.json").json()
    lists = [p for p, ops in spec["paths"].items() if "get" in ops and "{" not in p and p.startswith("/v1/")]
    for path in lists:
        params = {p["name"] for p in spec["paths"][path]["get"].get("parameters", [])}
        if "cursor" not in params:
            continue
        key = world.provider["operator"] if path.startswith(("/v1/incidents", "/v1/rma")) else world.a.keys["owner"]
        resp = client.get(f"{path}?cursor={cursor}", headers=auth(key))
        assert 400 <= resp.status_code < 500, (path, cursor, resp.status_code, resp.text[:200])


_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=40,
)


@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(hardware=st.dictionaries(_text, _json, max_size=6), labels=st.dictionaries(_text, _text, max_size=6))
def test_arbitrary_inventory_is_refused_or_reads_back_equal(
    client: Any, world: World, hardware: Any, labels: Any
) -> None:
    node = _fuzz_node(client, world)
    raw = json.dumps({"hardware": hardware, "labels": labels}, allow_nan=True)
    op = auth(world.provider["operator"])
    resp = client.request(
        "PATCH",
        f"/v1/nodes/{node}",
        content=raw.encode("utf-8", "surrogatepass"),
        headers={**op, "Content-Type": "application/json"},
    )
    assert resp.status_code < 500, resp.text[:300]
    got = client.get(f"/v1/nodes/{node}", headers=op)
    assert got.status_code == 200, got.text[:300]
    if resp.status_code == 200:
        assert got.json()["hardware"] == hardware and got.json()["labels"] == labels


_NODES: dict[int, str] = {}


def _fuzz_node(client: Any, world: World) -> str:
    if id(world) not in _NODES:
        _NODES[id(world)] = register(client, world)["id"]
    return _NODES[id(world)]


def test_list_pages_over_the_cap_are_cut_and_cursors_reach_every_item(
    client: Any, world: World, responses_under_the_cap: list[int]
) -> None:
    """Nodes with 48 kB of inventory each (within the edge's string limit) make a 200-item page of
    about 4.8 MB: it is cut under 4 MiB, and following next_cursor lists every node exactly once."""
    from velyrix.controlplane.db import models

    inventory = {part: part[0] * 16_000 for part in ("gpus", "nics", "disks")}
    with world.session() as s:
        for _ in range(100):
            s.add(models.Node(name=unique("big"), region="us-east-1", node_type="hgx-h200-8g", hardware=inventory))
        for node in s.scalars(sa.select(models.Node)):  # the enrolled fleet too: every page is a large one
            node.hardware = inventory
        s.commit()
        stored = set(s.scalars(sa.select(models.Node.id)))
    op = auth(world.provider["operator"])
    first = client.get("/v1/nodes", params={"limit": 200}, headers=op)
    assert first.status_code == 200 and len(first.content) <= response_cap.MAX_RESPONSE_BYTES
    page = first.json()
    assert 50 < len(page["items"]) < min(200, len(stored)) and page["next_cursor"] == page["items"][-1]["id"]
    seen = [i["id"] for i in page["items"]]
    while page["next_cursor"]:
        page = client.get("/v1/nodes", params={"limit": 200, "cursor": page["next_cursor"]}, headers=op).json()
        seen += [i["id"] for i in page["items"]]
    assert len(seen) == len(set(seen)) and set(seen) == stored
    assert max(responses_under_the_cap) > 3 * 1024 * 1024  # the cap was reached, not merely respected


def test_everything_stored_reads_back_within_the_limits(client: Any, world: World) -> None:
    """After the fuzzing above (same module, same database): every list answers, in strict JSON, and each
    stored object passes the edge's own rules again."""
    for path, key in (
        ("/v1/nodes", world.provider["operator"]),
        ("/v1/clusters", world.a.keys["owner"]),
        ("/v1/volumes", world.a.keys["owner"]),
        ("/v1/tenants", world.provider["operator"]),
        ("/v1/api-keys", world.a.keys["owner"]),
        ("/v1/audit-events", world.a.keys["owner"]),
    ):
        cursor = None
        while True:
            resp = client.get(path, params={"limit": 200, **({"cursor": cursor} if cursor else {})}, headers=auth(key))
            assert resp.status_code == 200, (path, resp.text[:300])
            page = json.loads(resp.text, parse_constant=lambda c, p=path: pytest.fail(f"{c} in {p}"))
            for item in page["items"]:
                edge.parse_strict(json.dumps(item).encode())  # raises on anything over the limits
            cursor = page["next_cursor"]
            if not cursor:
                break
