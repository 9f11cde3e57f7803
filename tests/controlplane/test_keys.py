"""API keys: format and checksum, only a hash stored, revocation and expiry effective on the next
request, and no key exceeding the rights of the key that creates or revokes it."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from tests.controlplane.conftest import World, auth, unique
from velyrix.controlplane.auth import keys
from velyrix.controlplane.db import models


def test_key_format_has_prefix_body_and_a_checksum_that_catches_typos() -> None:
    token = keys.generate()
    assert token.startswith("vlx_") and len(token) == keys.TOKEN_LEN
    assert keys.looks_valid(token)
    for i in range(4, len(token)):
        typo = token[:i] + ("A" if token[i] != "A" else "B") + token[i + 1 :]
        assert not keys.looks_valid(typo)
    assert len({keys.generate() for _ in range(1000)}) == 1000


def test_database_holds_only_a_hash_of_the_secret(client: Any, world: World) -> None:
    resp = client.post("/v1/api-keys", json={"name": "ci", "role": "viewer"}, headers=auth(world.a.keys["owner"]))
    assert resp.status_code == 201
    secret = resp.json()["secret"]
    assert client.get("/v1/clusters", headers=auth(secret)).status_code == 200
    with world.session() as s:
        row = s.get(models.ApiKey, resp.json()["id"])
        assert row.secret_sha256 == keys.digest(secret)
        dumped = str([tuple(r) for r in s.execute(sa.select(models.ApiKey.__table__))])
    assert secret not in dumped
    listed = client.get(f"/v1/api-keys/{row.id}", headers=auth(world.a.keys["owner"])).json()
    assert "secret" not in listed and listed["prefix"] == secret[: keys.DISPLAY_LEN]


def test_revocation_takes_effect_on_the_next_request(client: Any, world: World) -> None:
    key_id, secret = world.key(world.a, "member")
    assert client.get("/v1/clusters", headers=auth(secret)).status_code == 200
    assert client.delete(f"/v1/api-keys/{key_id}", headers=auth(world.a.keys["admin"])).status_code == 200
    after = client.get("/v1/clusters", headers=auth(secret))
    assert after.status_code == 401 and after.headers["WWW-Authenticate"].startswith("Bearer")


def test_expired_key_is_refused(client: Any, world: World) -> None:
    assert client.get("/v1/clusters", headers=auth(world.expired)).status_code == 401


@pytest.mark.parametrize(
    ("creator", "role", "expected"),
    [
        ("owner", "owner", 201),
        ("owner", "billing", 201),
        ("admin", "member", 201),
        ("admin", "owner", 403),  # owner has billing:read and tenants:write, which admin lacks
        ("admin", "billing", 403),
        ("member", "viewer", 403),
        ("viewer", "viewer", 403),
    ],
)
def test_a_key_never_creates_a_key_with_more_rights(
    client: Any, world: World, creator: str, role: str, expected: int
) -> None:
    resp = client.post("/v1/api-keys", json={"name": unique("k"), "role": role}, headers=auth(world.a.keys[creator]))
    assert resp.status_code == expected, resp.text


def test_scopes_narrow_a_role(client: Any, world: World) -> None:
    resp = client.post(
        "/v1/api-keys",
        json={"name": "ro", "role": "member", "scopes": ["clusters:read"]},
        headers=auth(world.a.keys["owner"]),
    )
    assert resp.status_code == 201 and resp.json()["scopes"] == ["clusters:read"]
    narrow = resp.json()["secret"]
    assert client.get("/v1/clusters", headers=auth(narrow)).status_code == 200
    denied = client.get("/v1/volumes", headers=auth(narrow))
    assert denied.status_code == 403 and denied.json()["code"] == "forbidden"


def test_scopes_outside_the_role_and_unknown_roles_are_refused_with_a_hint(client: Any, world: World) -> None:
    extra = client.post(
        "/v1/api-keys",
        json={"name": "x", "role": "viewer", "scopes": ["clusters:write"]},
        headers=auth(world.a.keys["owner"]),
    )
    assert extra.status_code == 422 and "viewer" in extra.json()["hint"]
    typo = client.post("/v1/api-keys", json={"name": "x", "role": "ownr"}, headers=auth(world.a.keys["owner"]))
    assert typo.status_code == 422 and "owner" in typo.json()["hint"]


def test_a_key_made_by_an_expiring_key_expires_no_later(client: Any, world: World) -> None:
    from datetime import timedelta

    key_id, secret = world.key(world.a, "admin", expires_at=models.utcnow() + timedelta(hours=1))
    made = client.post("/v1/api-keys", json={"name": "child", "role": "viewer"}, headers=auth(secret)).json()
    with world.session() as s:
        assert s.get(models.ApiKey, made["id"]).expires_at <= s.get(models.ApiKey, key_id).expires_at


def test_admin_cannot_revoke_an_owner_key(client: Any, world: World) -> None:
    owner_id, _ = world.key(world.a, "owner")
    assert client.delete(f"/v1/api-keys/{owner_id}", headers=auth(world.a.keys["admin"])).status_code == 403
    assert client.delete(f"/v1/api-keys/{owner_id}", headers=auth(world.a.keys["owner"])).status_code == 200


def test_a_retried_key_creation_never_replays_the_secret(client: Any, world: World) -> None:
    headers = {**auth(world.a.keys["owner"]), "Idempotency-Key": unique("key-retry")}
    first = client.post("/v1/api-keys", json={"name": "retry", "role": "viewer"}, headers=headers)
    assert first.status_code == 201
    again = client.post("/v1/api-keys", json={"name": "retry", "role": "viewer"}, headers=headers)
    assert again.status_code == 409 and again.json()["code"] == "secret_not_replayable"
    assert first.json()["id"] in again.json()["hint"]
    with world.session() as s:
        stored = str([tuple(r) for r in s.execute(sa.select(models.IdempotencyRecord.__table__))])
    assert first.json()["secret"] not in stored
