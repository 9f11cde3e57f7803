"""``velyrix keys create|list|revoke|rotate`` against a real server: scopes, expiry, description, last
use; a key never exceeds (nor outlives) the key that made it; revocation and rotation take effect on the
next request."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import httpx

from tests.identity.conftest import Served


def _secret(result: Any) -> str:
    assert result.exit_code == 0, result.stderr
    return str(result.stdout.strip().splitlines()[-1])


def _status(served: Served, secret: str) -> int:
    return httpx.get(f"{served.url}/v1/clusters", headers={"Authorization": f"Bearer {secret}"}).status_code


def test_keys_create_list_revoke_rotate(velyrix: Callable[..., Any], served: Served, monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    owner = _secret(velyrix("admin", "create-tenant", "acme"))
    assert velyrix("login", "--endpoint", served.url, "--api-key", owner).exit_code == 0

    made = velyrix(
        "keys",
        "create",
        "ci",
        "--role",
        "member",
        "--scope",
        "clusters:read",
        "--scope",
        "tenants:read",
        "--expires-in",
        "30d",
        "--description",
        "CI [bold]deploys[/]",
    )
    ci = _secret(made)
    assert ci.startswith("vlx_") and "member" in made.stdout
    assert _status(served, ci) == 200

    listed = velyrix("keys", "list", "--json")
    assert listed.exit_code == 0, listed.stderr
    keys = {k["name"]: k for k in json.loads(listed.stdout)}
    assert keys["ci"]["scopes"] == ["clusters:read", "tenants:read"]
    assert keys["ci"]["description"] == "CI [bold]deploys[/]"
    expires = dt.datetime.fromisoformat(keys["ci"]["expires_at"])
    assert dt.timedelta(days=29) < expires - dt.datetime.now(dt.UTC) <= dt.timedelta(days=30)
    assert keys["ci"]["last_used_at"] is not None and keys["ci"]["last_used_address"] == "127.0.0.1"
    table = velyrix("keys", "list")
    row = next(line for line in table.stdout.splitlines() if keys["ci"]["id"] in line)
    assert "CI [bold]deploys[/]" in row and "from 127.0.0.1" in row and "active" in row

    # a key cannot make a key with rights it lacks
    assert _status(served, ci) == 200
    assert velyrix("login", "--endpoint", served.url, "--api-key", ci).exit_code == 0
    refused = velyrix("keys", "create", "x", "--role", "viewer")
    assert refused.exit_code == 2 and "keys:admin" in refused.stderr and "Traceback" not in refused.stderr

    velyrix("login", "--endpoint", served.url, "--api-key", owner)
    rotated = velyrix("keys", "rotate", keys["ci"]["id"])
    new_ci = _secret(rotated)
    assert _status(served, ci) == 401 and _status(served, new_ci) == 200
    after = {k["name"]: k for k in json.loads(velyrix("keys", "list", "--json").stdout)}
    assert after["ci"]["id"] != keys["ci"]["id"] and after["ci"]["description"] == "CI [bold]deploys[/]"
    assert after["ci"]["expires_at"] == keys["ci"]["expires_at"] and after["ci"]["scopes"] == keys["ci"]["scopes"]

    revoked = velyrix("keys", "revoke", after["ci"]["id"])
    assert revoked.exit_code == 0 and "revoked" in revoked.stdout
    assert _status(served, new_ci) == 401
    assert "ci" not in {k["name"] for k in json.loads(velyrix("keys", "list", "--json").stdout)}
    assert "ci" in {k["name"] for k in json.loads(velyrix("keys", "list", "--revoked", "--json").stdout)}


def test_a_key_never_outlives_its_creator(velyrix: Callable[..., Any], served: Served) -> None:
    owner = _secret(velyrix("admin", "create-tenant", "acme"))
    velyrix("login", "--endpoint", served.url, "--api-key", owner)
    admin = _secret(velyrix("keys", "create", "ops", "--role", "admin", "--expires-in", "1d"))
    velyrix("login", "--endpoint", served.url, "--api-key", admin)
    child = json.loads(velyrix("keys", "create", "child", "--role", "member", "--expires-in", "90d", "--json").stdout)
    parent = next(k for k in json.loads(velyrix("keys", "list", "--json").stdout) if k["name"] == "ops")
    assert child["expires_at"] == parent["expires_at"]
    owner_try = velyrix("keys", "create", "boss", "--role", "owner")
    assert owner_try.exit_code == 2 and "cannot create a key of role 'owner'" in owner_try.stderr


def test_bad_flags_exit_2_with_a_hint(velyrix: Callable[..., Any], served: Served) -> None:
    owner = _secret(velyrix("admin", "create-tenant", "acme"))
    velyrix("login", "--endpoint", served.url, "--api-key", owner)
    bad = velyrix("keys", "create", "x", "--expires-in", "soon")
    assert bad.exit_code == 2 and "90d" in bad.stderr
    bad_id = velyrix("keys", "revoke", "nope")
    assert bad_id.exit_code == 2 and "key_" in bad_id.stderr
    unknown = velyrix("keys", "create", "x", "--scope", "clusters:raed")
    assert unknown.exit_code == 2 and "clusters:read" in unknown.stderr
