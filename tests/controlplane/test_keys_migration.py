"""Migration 0010: keys revoked before revocation cascaded left working children; upgrading a database
built at revision 0008 revokes them (transitively), on SQLite and PostgreSQL, and they answer 401."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import sqlalchemy as sa

from velyrix.controlplane.auth import keys
from velyrix.controlplane.db import engine, migrate

_n = itertools.count()
_WHEN = "2026-11-30 10:00:00"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'old.db'}"
    return str(request.getfixturevalue("pg_server").create_database(f"keysmig{next(_n)}"))


def _insert_key(conn: sa.Connection, key_id: str, creator: str | None, revoked: bool) -> str:
    token = keys.generate()
    conn.execute(
        sa.text(
            "INSERT INTO api_keys (id, tenant_id, name, role, scopes, prefix, secret_sha256, created_by_key_id,"
            " created_at, revoked_at) VALUES (:id, 'ten_old', :id, 'admin', :scopes, :prefix, :digest, :creator,"
            " :at, :revoked)"
        ),
        {
            "id": key_id,
            "scopes": '["clusters:read"]',
            "prefix": keys.display_prefix(token),
            "digest": keys.digest(token),
            "creator": creator,
            "at": _WHEN,
            "revoked": _WHEN if revoked else None,
        },
    )
    return token


def test_children_of_keys_revoked_before_the_cascade_are_revoked_by_the_upgrade(
    old_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from velyrix.ops.service import create_app

    eng = engine.make_engine(old_url)
    migrate.upgrade(old_url, revision="0008", engine=eng)
    with eng.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO tenants (id, name, display_name, created_at, updated_at, version)"
                " VALUES ('ten_old', 'old', 'OLD', :at, :at, 1)"
            ),
            {"at": _WHEN},
        )
        # gone (revoked) -> child -> grandchild; kept -> gone2 (revoked) -> orphan; loner stands alone
        tokens = {
            "key_gone": _insert_key(conn, "key_gone", None, revoked=True),
            "key_child": _insert_key(conn, "key_child", "key_gone", revoked=False),
            "key_grandchild": _insert_key(conn, "key_grandchild", "key_child", revoked=False),
            "key_kept": _insert_key(conn, "key_kept", None, revoked=False),
            "key_gone2": _insert_key(conn, "key_gone2", "key_kept", revoked=True),
            "key_orphan": _insert_key(conn, "key_orphan", "key_gone2", revoked=False),
            "key_loner": _insert_key(conn, "key_loner", None, revoked=False),
        }
    assert migrate.upgrade(old_url, engine=eng) == migrate.head()
    with eng.connect() as conn:
        revoked = set(conn.execute(sa.text("SELECT id FROM api_keys WHERE revoked_at IS NOT NULL")).scalars())
    eng.dispose()
    assert revoked == {"key_gone", "key_child", "key_grandchild", "key_gone2", "key_orphan"}

    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "signing"))
    app = create_app(old_url)
    try:
        with TestClient(app) as client:
            status = {
                key_id: client.get("/v1/clusters", headers={"Authorization": f"Bearer {token}"}).status_code
                for key_id, token in tokens.items()
            }
    finally:
        app.state.engine.dispose()
    assert status == {
        "key_gone": 401,
        "key_child": 401,
        "key_grandchild": 401,
        "key_kept": 200,
        "key_gone2": 401,
        "key_orphan": 401,
        "key_loner": 200,
    }
