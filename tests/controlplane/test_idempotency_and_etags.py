"""Idempotency-Key on POST and optimistic locking with ETag / If-Match, sequentially and under real
concurrency (threads against a uvicorn server on loopback)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tests.controlplane.conftest import World, auth, cluster_body, unique


def _clusters_named(client: Any, key: str, name: str) -> list[dict[str, Any]]:
    return client.get("/v1/clusters", params={"name": name}, headers=auth(key)).json()["items"]


def test_retried_post_with_the_same_key_creates_one_cluster(client: Any, world: World) -> None:
    key = world.a.keys["member"]
    body = cluster_body(unique("idem"))
    headers = {**auth(key), "Idempotency-Key": unique("retry")}
    first = client.post("/v1/clusters", json=body, headers=headers)
    second = client.post("/v1/clusters", json=body, headers=headers)
    assert first.status_code == second.status_code == 201
    assert second.headers["Idempotent-Replayed"] == "true"
    assert first.json() == second.json()
    assert len(_clusters_named(client, key, body["name"])) == 1


def test_same_key_with_another_body_is_refused(client: Any, world: World) -> None:
    headers = {**auth(world.a.keys["member"]), "Idempotency-Key": unique("k")}
    assert (
        client.post(
            "/v1/volumes",
            json={"name": unique("v"), "region": "us-east-1", "tier": "object", "size_tb": 1},
            headers=headers,
        ).status_code
        == 201
    )
    again = client.post(
        "/v1/volumes",
        json={"name": unique("v"), "region": "us-east-1", "tier": "object", "size_tb": 2},
        headers=headers,
    )
    assert again.status_code == 422
    assert again.json()["code"] == "idempotency_key_reused"


def test_idempotency_keys_are_per_tenant(client: Any, world: World) -> None:
    key = unique("shared")
    for tenant in (world.a, world.b):
        body = {"name": "same-name", "region": "us-east-1", "tier": "block", "size_tb": 1}
        resp = client.post("/v1/volumes", json=body, headers={**auth(tenant.keys["owner"]), "Idempotency-Key": key})
        assert resp.status_code == 201
        assert resp.json()["tenant_id"] == tenant.tenant_id


def test_concurrent_retries_create_exactly_one_cluster(live_url: str, client: Any, world: World) -> None:
    key = world.a.keys["member"]
    body = cluster_body(unique("race"))
    headers = {**auth(key), "Idempotency-Key": unique("race")}

    def post(_: int) -> httpx.Response:
        with httpx.Client(base_url=live_url, timeout=30) as http:
            return http.post("/v1/clusters", json=body, headers=headers)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(post, range(8)))
    assert [r.status_code for r in answers] == [201] * 8, [r.text for r in answers if r.status_code != 201]
    assert len({r.json()["id"] for r in answers}) == 1
    assert len(_clusters_named(client, key, body["name"])) == 1


def test_stale_etag_gets_412_and_changes_nothing(client: Any, world: World) -> None:
    key = world.a.keys["member"]
    cluster_id = world.cluster(world.a)
    read = client.get(f"/v1/clusters/{cluster_id}", headers=auth(key))
    etag, body = read.headers["ETag"], read.json()["spec"]
    body.pop("address")
    ok = client.put(
        f"/v1/clusters/{cluster_id}", json={**body, "node_count": 2}, headers={**auth(key), "If-Match": etag}
    )
    assert ok.status_code == 200 and ok.headers["ETag"] != etag
    stale = client.put(
        f"/v1/clusters/{cluster_id}", json={**body, "node_count": 3}, headers={**auth(key), "If-Match": etag}
    )
    assert stale.status_code == 412
    assert stale.json()["code"] == "precondition_failed"
    assert client.get(f"/v1/clusters/{cluster_id}", headers=auth(key)).json()["node_count"] == 2


def test_concurrent_updates_with_one_etag_let_exactly_one_win(live_url: str, client: Any, world: World) -> None:
    key = world.a.keys["member"]
    volume_id = world.volume(world.a)
    etag = client.get(f"/v1/volumes/{volume_id}", headers=auth(key)).headers["ETag"]

    def patch(i: int) -> httpx.Response:
        with httpx.Client(base_url=live_url, timeout=30) as http:
            return http.patch(
                f"/v1/volumes/{volume_id}", json={"size_tb": 100 + i}, headers={**auth(key), "If-Match": etag}
            )

    with ThreadPoolExecutor(6) as pool:
        codes = sorted(r.status_code for r in pool.map(patch, range(6)))
    assert codes == [200] + [412] * 5
    final = client.get(f"/v1/volumes/{volume_id}", headers=auth(key)).json()
    assert final["version"] == 2


def test_if_match_star_and_absent_header_apply_unconditionally(client: Any, world: World) -> None:
    key = world.a.keys["member"]
    volume_id = world.volume(world.a)
    assert (
        client.patch(
            f"/v1/volumes/{volume_id}", json={"size_tb": 11}, headers={**auth(key), "If-Match": "*"}
        ).status_code
        == 200
    )
    assert client.patch(f"/v1/volumes/{volume_id}", json={"size_tb": 12}, headers=auth(key)).status_code == 200
