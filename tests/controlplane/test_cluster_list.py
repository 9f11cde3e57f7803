"""``GET /v1/clusters`` read as the cluster GET is (``Ctx.read``: on the event loop on SQLite and
PostgreSQL, one statement of ``scoping.Scope.page_rows``, JSON columns sent as stored): the pages, their
order and cursors are the ORM's (``Scope.page``), every body is the model's JSON, and the bytes are the same
on the loop and through the worker-thread path. Lazy routes (``require(..., lazy=True)``) take no database
slot for reads served on the loop, and take one when they fall back to a thread."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.controlplane.conftest import World, auth, cluster_body, unique


@pytest.fixture(scope="module")
def clusters(client: Any, world: World) -> list[str]:
    """Five clusters of tenant a (two in eu-west-1), one of tenant b: the ids of a's."""
    made = []
    for n in range(5):
        body = cluster_body(unique(f"list{n}"), region="eu-west-1" if n in (1, 3) else "us-east-1", node_count=2)
        answer = client.post("/v1/clusters", json=body, headers=auth(world.a.keys["member"]))
        assert answer.status_code == 201, answer.text
        made.append(answer.json()["id"])
    answer = client.post("/v1/clusters", json=cluster_body(unique("other")), headers=auth(world.b.keys["member"]))
    assert answer.status_code == 201
    return made


@contextlib.contextmanager
def _through_threads(client: Any) -> Iterator[None]:
    state = client.app.state
    saved = state.inline_reader, state.inline_pg
    state.inline_reader = state.inline_pg = None
    try:
        yield
    finally:
        state.inline_reader, state.inline_pg = saved


def _orm_page(client: Any, key: str, params: dict[str, Any]) -> dict[str, Any]:
    """The page as the ORM route answered it: ``Scope.page`` over entities, through the response model."""
    from velyrix.controlplane import scoping
    from velyrix.controlplane.api import schemas
    from velyrix.controlplane.api.routes import clusters
    from velyrix.controlplane.db import models
    from velyrix.controlplane.identity import resolve

    state = client.app.state
    with state.sessionmaker() as s, state.engine.connect() as conn:
        principal = resolve.authenticate(conn, key)
        filters = {f: params.get(f) for f in ("name", "region", "phase")}
        rows, nxt = scoping.Scope(s, principal).page(
            models.Cluster, filters=filters, cursor=params.get("cursor"), limit=params.get("limit", 50)
        )
        page = {"items": [clusters.out(r) for r in rows], "next_cursor": nxt}
        return json.loads(schemas.Page[schemas.ClusterOut].model_validate(page).model_dump_json())


def _walk(client: Any, key: str, params: dict[str, Any]) -> list[bytes]:
    """Every page's body, following ``next_cursor``, each checked against the ORM's page."""
    bodies, params = [], dict(params)
    while True:
        answer = client.get("/v1/clusters", params=params, headers=auth(key))
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == _orm_page(client, key, params)
        bodies.append(answer.content)
        if answer.json()["next_cursor"] is None:
            return bodies
        params["cursor"] = answer.json()["next_cursor"]


@pytest.mark.parametrize(
    "params", [{"limit": 2}, {"limit": 200}, {"region": "eu-west-1", "limit": 1}, {"phase": "Pending"}, {}]
)
def test_the_pages_are_the_orms_and_the_same_bytes_on_the_loop_and_in_threads(
    client: Any, world: World, clusters: list[str], params: dict[str, Any]
) -> None:
    key = world.a.keys["viewer"]
    on_loop = _walk(client, key, params)
    with _through_threads(client):
        threaded = _walk(client, key, params)
    assert on_loop == threaded
    ids = [item["id"] for body in on_loop for item in json.loads(body)["items"]]
    expected = [c for n, c in enumerate(clusters) if params.get("region") != "eu-west-1" or n in (1, 3)]
    assert [i for i in ids if i in clusters] == sorted(expected)
    if params.get("limit") == 2:
        assert len(on_loop) >= 3  # five clusters, two per page


def test_a_name_filter_and_the_tenancy_hold(client: Any, world: World, clusters: list[str]) -> None:
    named = client.get(f"/v1/clusters/{clusters[2]}", headers=auth(world.a.keys["viewer"])).json()["name"]
    page = client.get("/v1/clusters", params={"name": named}, headers=auth(world.a.keys["viewer"])).json()
    assert [c["id"] for c in page["items"]] == [clusters[2]] and page["next_cursor"] is None
    theirs = client.get("/v1/clusters", params={"name": named}, headers=auth(world.b.keys["viewer"])).json()
    assert theirs == {"items": [], "next_cursor": None}
    everyone = _walk(client, world.provider["operator"], {"limit": 3})
    ids = {item["id"] for body in everyone for item in json.loads(body)["items"]}
    assert set(clusters) <= ids and len(ids) > len(clusters)


def test_lazy_reads_take_no_database_slot_and_their_fallback_does(
    client: Any, world: World, clusters: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every slot of the API held (as by requests waiting on the database): the cluster GET and list are
    served on the loop; a sync route and the same GET through the thread path answer 503 with Retry-After."""
    gate = client.app.state.db_gate
    monkeypatch.setattr(gate, "wait_s", 0.2)
    key = auth(world.a.keys["viewer"])
    assert client.get(f"/v1/clusters/{clusters[0]}", headers=key).status_code == 200  # principal cached
    portal = client.portal
    held = [portal.call(gate.acquire, "test") for _ in range(gate.slots)]
    try:
        assert client.get(f"/v1/clusters/{clusters[0]}", headers=key).status_code == 200
        assert client.get("/v1/clusters", params={"limit": 2}, headers=key).status_code == 200
        for busy in (client.get("/v1/volumes", headers=key), _threaded_get(client, clusters[0], key)):
            assert busy.status_code == 503 and busy.json()["code"] == "database_busy"
            assert int(busy.headers["Retry-After"]) > 0
    finally:
        for semaphore in held:
            portal.call(_release, gate, semaphore)
    assert client.get("/v1/volumes", headers=key).status_code == 200


def _threaded_get(client: Any, cluster_id: str, key: dict[str, str]) -> Any:
    with _through_threads(client):
        return client.get(f"/v1/clusters/{cluster_id}", headers=key)


async def _release(gate: Any, semaphore: Any) -> None:
    gate.release(semaphore)
