"""Key and write rules of issue 22: revoking a key revokes the keys it made (transitively); an admin
cannot mint an owner; If-Match compares strongly (weak tags refused); a PUT without If-Match that loses
a race to another writer answers 409 ``concurrent_update`` (not a 412 it never asked for)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from tests.controlplane.conftest import World, auth, cluster_body, unique
from velyrix.controlplane.db import models


def _make_key(client: Any, secret: str, role: str) -> dict[str, Any]:
    resp = client.post("/v1/api-keys", json={"name": unique("k"), "role": role}, headers=auth(secret))
    assert resp.status_code == 201, resp.text
    return resp.json()  # type: ignore[no-any-return]


def test_revoking_a_key_revokes_the_keys_it_created(client: Any, world: World) -> None:
    _owner_id, owner = world.key(world.a, "owner")
    child = _make_key(client, owner, "admin")
    grandchild = _make_key(client, child["secret"], "member")
    unrelated = _make_key(client, world.a.keys["owner"], "viewer")
    owner_row = client.get("/v1/api-keys", params={"limit": 200}, headers=auth(world.a.keys["owner"])).json()
    owner_id = next(k["id"] for k in owner_row["items"] if k["id"] == _owner_id)
    resp = client.delete(f"/v1/api-keys/{owner_id}", headers=auth(world.a.keys["owner"]))
    assert resp.status_code == 200, resp.text
    for secret in (owner, child["secret"], grandchild["secret"]):
        assert client.get("/v1/clusters", headers=auth(secret)).status_code == 401
    assert client.get("/v1/clusters", headers=auth(unrelated["secret"])).status_code == 200


def test_an_admin_cannot_mint_an_owner_key(client: Any, world: World) -> None:
    resp = client.post("/v1/api-keys", json={"name": unique("k"), "role": "owner"}, headers=auth(world.a.keys["admin"]))
    assert resp.status_code == 403 and "cannot create a key of role 'owner'" in resp.json()["detail"]
    assert _make_key(client, world.a.keys["admin"], "admin")["role"] == "admin"


def test_weak_etags_never_match(client: Any, world: World) -> None:
    volume_id = world.volume(world.a)
    key = world.a.keys["member"]
    etag = client.get(f"/v1/volumes/{volume_id}", headers=auth(key)).headers["ETag"]
    weak = client.patch(
        f"/v1/volumes/{volume_id}", json={"size_tb": 12}, headers={**auth(key), "If-Match": f"W/{etag}"}
    )
    assert weak.status_code == 412 and weak.json()["code"] == "precondition_failed"
    strong = client.patch(f"/v1/volumes/{volume_id}", json={"size_tb": 12}, headers={**auth(key), "If-Match": etag})
    assert strong.status_code == 200


def test_a_put_without_if_match_that_loses_a_race_answers_409(client: Any, world: World, app: Any) -> None:
    key = world.a.keys["member"]
    body = cluster_body(unique("race"))
    created = client.post("/v1/clusters", json=body, headers=auth(key))
    assert created.status_code == 201, created.text
    cluster_id = created.json()["id"]
    engine = app.app.state.engine

    def reconciler_wins(session: Any, *_: Any) -> None:  # another writer commits between read and write
        with engine.begin() as conn:
            conn.execute(
                sa.update(models.Cluster)
                .where(models.Cluster.id == cluster_id)
                .values(version=models.Cluster.version + 1)
            )

    sa.event.listen(app.app.state.sessionmaker, "before_flush", reconciler_wins, once=True)
    try:
        resp = client.put(f"/v1/clusters/{cluster_id}", json={**body, "node_count": 2}, headers=auth(key))
    finally:
        if sa.event.contains(app.app.state.sessionmaker, "before_flush", reconciler_wins):
            sa.event.remove(app.app.state.sessionmaker, "before_flush", reconciler_wins)
    assert resp.status_code == 409 and resp.json()["code"] == "concurrent_update", resp.text
