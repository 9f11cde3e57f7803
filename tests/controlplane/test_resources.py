"""Behaviour of the resources: clusters (spec, plan, status), volumes (independent lifecycle,
forbid_deletion), nodes (tenants see their allocation), regions (capacity), lists (cursor pagination,
filters), errors (problem+json with a stable code and the request id) and health."""

from __future__ import annotations

from typing import Any

from tests.controlplane.conftest import World, auth, cluster_body, unique


def test_created_cluster_carries_spec_plan_and_pending_status(client: Any, world: World) -> None:
    body = cluster_body(unique("train"), node_count=4) | {"workload": {"model_params": 70e9}}
    resp = client.post("/v1/clusters", json=body, headers=auth(world.a.keys["member"]))
    assert resp.status_code == 201, resp.text
    c = resp.json()
    assert c["spec"]["node_count"] == 4 and c["spec"]["workload"]["model_params"] == 70e9
    assert c["plan"]["gpus"] == 32 and c["plan"]["cost"]["monthly_usd"] > 0
    assert c["status"]["phase"] == "Pending"
    assert [h["phase"] for h in c["status"]["phase_history"]] == ["Pending"]
    assert c["status"]["conditions"][0]["type"] == "Planned" and c["status"]["events"]
    got = client.get(f"/v1/clusters/{c['id']}", headers=auth(world.a.keys["viewer"]))
    assert got.json() == c and got.headers["ETag"] == f'"{c["id"]}.v1"'


def test_invalid_spec_names_the_field_and_the_closest_value(client: Any, world: World) -> None:
    body = cluster_body(unique("x")) | {"fabric": "infiniband-nd", "storage": {"parallel_fs_tb": -1}}
    resp = client.post("/v1/clusters", json=body, headers=auth(world.a.keys["member"]))
    assert resp.status_code == 422
    problem = resp.json()
    assert problem["code"] == "spec_invalid" and resp.headers["content-type"] == "application/problem+json"
    messages = " ".join(d["message"] for d in problem["diagnostics"])
    assert "fabric" in messages and "storage.parallel_fs_tb" in messages
    assert any(d["suggestion"] == "infiniband-ndr" for d in problem["diagnostics"])
    unknown_field = client.post(
        "/v1/clusters", json=cluster_body(unique("x")) | {"nodes": 3}, headers=auth(world.a.keys["member"])
    )
    assert unknown_field.status_code == 422 and unknown_field.json()["code"] == "invalid_request"


def test_capacity_and_name_conflicts_answer_409(client: Any, world: World) -> None:
    key = auth(world.a.keys["member"])
    huge = client.post(
        "/v1/clusters", json=cluster_body(unique("big"), node_count=250, region="eu-west-1"), headers=key
    )
    assert huge.status_code == 409 and huge.json()["code"] == "insufficient_capacity"
    body = cluster_body(unique("dup"))
    assert client.post("/v1/clusters", json=body, headers=key).status_code == 201
    assert client.post("/v1/clusters", json=body, headers=key).json()["code"] == "conflict"


def test_region_capacity_counts_present_clusters(client: Any, world: World) -> None:
    def available() -> int:
        region = client.get("/v1/regions/us-east-1", headers=auth(world.a.keys["billing"])).json()
        return next(c["available_nodes"] for c in region["capacity"] if c["node_type"] == "hgx-h100-8g")

    before = available()
    body = cluster_body(unique("cap"), node_count=8) | {"node_type": "hgx-h100-8g"}
    created = client.post("/v1/clusters", json=body, headers=auth(world.b.keys["member"])).json()
    assert available() == before - 8
    client.delete(f"/v1/clusters/{created['id']}", headers=auth(world.b.keys["member"]))
    assert available() == before
    typo = client.get("/v1/regions/us-east", headers=auth(world.a.keys["viewer"]))
    assert typo.status_code == 404 and "us-east-1" in typo.json()["hint"]


def test_deleting_a_cluster_keeps_its_volumes(client: Any, world: World) -> None:
    key = auth(world.a.keys["member"])
    cluster = client.post("/v1/clusters", json=cluster_body(unique("c")), headers=key).json()
    volume = client.post(
        "/v1/volumes",
        json={
            "name": unique("ckpt"),
            "region": "us-east-1",
            "tier": "parallel_fs",
            "size_tb": 100,
            "cluster_id": cluster["id"],
        },
        headers=key,
    ).json()
    deleted = client.delete(f"/v1/clusters/{cluster['id']}", headers=key)
    assert deleted.status_code == 202 and deleted.json()["status"]["phase"] == "Deleting"
    assert [h["phase"] for h in deleted.json()["status"]["phase_history"]] == ["Pending", "Deleting"]
    assert client.get(f"/v1/volumes/{volume['id']}", headers=key).status_code == 200


def test_forbid_deletion_protects_a_volume_until_turned_off(client: Any, world: World) -> None:
    key = auth(world.a.keys["member"])
    v = client.post(
        "/v1/volumes",
        json={"name": unique("keep"), "region": "us-east-1", "tier": "object", "size_tb": 5, "forbid_deletion": True},
        headers=key,
    ).json()
    refused = client.delete(f"/v1/volumes/{v['id']}", headers=key)
    assert refused.status_code == 409 and refused.json()["code"] == "deletion_forbidden"
    assert client.patch(f"/v1/volumes/{v['id']}", json={"size_tb": 4}, headers=key).status_code == 422
    assert client.patch(f"/v1/volumes/{v['id']}", json={"forbid_deletion": False}, headers=key).status_code == 200
    assert client.delete(f"/v1/volumes/{v['id']}", headers=key).status_code == 204
    assert client.get(f"/v1/volumes/{v['id']}", headers=key).status_code == 404
    bad_tier = client.post(
        "/v1/volumes", json={"name": unique("t"), "region": "us-east-1", "tier": "objekt", "size_tb": 1}, headers=key
    )
    assert bad_tier.status_code == 422 and "'object'" in bad_tier.json()["hint"]


def test_tenants_see_their_allocated_nodes_and_operators_the_fleet(client: Any, world: World) -> None:
    cluster_id = world.cluster(world.a)
    mine = world.node(world.a, cluster_id)
    free = world.node(None)
    tenant_view = client.get("/v1/nodes", params={"limit": 200}, headers=auth(world.a.keys["viewer"])).json()["items"]
    assert mine in {n["id"] for n in tenant_view} and free not in {n["id"] for n in tenant_view}
    assert client.get(f"/v1/nodes/{free}", headers=auth(world.a.keys["viewer"])).status_code == 404
    enrolled = {"limit": 200, "provisioning_state": "enrolled"}  # not the free production fleet
    fleet = client.get("/v1/nodes", params=enrolled, headers=auth(world.provider["operator"])).json()["items"]
    assert {mine, free} <= {n["id"] for n in fleet}
    by_cluster = client.get("/v1/nodes", params={"cluster_id": cluster_id}, headers=auth(world.a.keys["viewer"]))
    assert [n["id"] for n in by_cluster.json()["items"]] == [mine]


def test_cursor_pagination_walks_every_item_once(client: Any, world: World) -> None:
    key = auth(world.b.keys["member"])
    names = {unique("page") for _ in range(5)}
    for name in names:
        body = {"name": name, "region": "us-east-1", "tier": "block", "size_tb": 1}
        assert client.post("/v1/volumes", json=body, headers=key).status_code == 201
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/volumes", params=params, headers=key).json()
        assert len(page["items"]) <= 2
        seen += [v["name"] for v in page["items"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert names <= set(seen) and len(seen) == len(set(seen))
    bad = client.get("/v1/volumes", params={"cursor": "garbage!"}, headers=key)
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_request" and "cursor" in bad.json()["detail"]
    filtered = client.get("/v1/volumes", params={"tier": "object"}, headers=key).json()["items"]
    assert all(v["tier"] == "object" for v in filtered)


def test_problem_details_carry_code_and_the_request_id_of_the_response(client: Any, world: World) -> None:
    resp = client.get("/v1/clusters/clu_nope", headers=auth(world.a.keys["viewer"]))
    problem = resp.json()
    assert resp.status_code == 404 and problem["status"] == 404 and problem["code"] == "not_found"
    assert problem["type"].endswith("/not_found") and problem["instance"] == "/v1/clusters/clu_nope"
    assert problem["request_id"] == resp.headers["X-Request-ID"]


def test_health_and_readiness(client: Any) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["schema_revision"]
    assert client.get("/openapi.json").json()["info"]["title"] == "Velyrix control plane"
    assert client.get("/docs").status_code == 200


def test_tenant_rename_uses_etags(client: Any, world: World) -> None:
    path = f"/v1/tenants/{world.b.tenant_id}"
    etag = client.get(path, headers=auth(world.b.keys["owner"])).headers["ETag"]
    ok = client.patch(path, json={"display_name": "B Corp"}, headers={**auth(world.b.keys["owner"]), "If-Match": etag})
    assert ok.status_code == 200 and ok.json()["display_name"] == "B Corp"
    stale = client.patch(path, json={"display_name": "Z"}, headers={**auth(world.b.keys["owner"]), "If-Match": etag})
    assert stale.status_code == 412


def test_unknown_query_parameter_is_refused_with_the_closest_name(client: Any, world: World) -> None:
    resp = client.get("/v1/clusters", params={"phse": "Ready"}, headers=auth(world.a.keys["viewer"]))
    assert resp.status_code == 422 and resp.json()["code"] == "invalid_input"
    assert "'phase'" in resp.json()["hint"]
    assert (
        client.get(
            "/v1/clusters", params={"phase": "Ready", "limit": 5}, headers=auth(world.a.keys["viewer"])
        ).status_code
        == 200
    )
