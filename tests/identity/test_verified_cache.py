"""The API caches verified keys and sessions (``identity/verified.py``) and checks them against the
credential generation that the database's triggers move on (migration ``0022``): a key revoked, a
session ended or a user deactivated, through the API, by another replica on the same database or by a
statement straight in the database, answers 401 on the very next request of a warm cache; a database
whose triggers are gone gets no cache at all."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import sqlalchemy.orm

from tests.controlplane.conftest import assert_each_mutation_audited_once
from tests.identity.conftest import Served


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, home: Path, tmp_path: Path) -> Iterator[Served]:
    """The control plane under uvicorn on its SQLite database in ``home``, or on a new PostgreSQL one."""
    from velyrix.ops.service import create_app

    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("pg_server").create_database(f"vc{tmp_path.name[-12:].replace('-', '')}")
    with Served(create_app(url)) as s:
        yield s
    assert_each_mutation_audited_once(s.recorder)


def _tenant_key_and_session(app: Any) -> tuple[str, str, str, str]:
    """(owner key, its id, a viewer's session cookie, that user's id) of a new tenant."""
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import sessions

    with app.state.sessionmaker() as s:
        tenant = models.Tenant(name="acme", display_name="acme")
        s.add(tenant)
        s.flush()
        key, secret = principals.issue_key(s, tenant_id=tenant.id, name="owner", role="owner")
        user = User(tenant_id=tenant.id, user_name="alice@acme.example", role="viewer", groups=[], scim={})
        s.add(user)
        s.flush()
        _, cookie = sessions.start(s, user, "oidc")
        s.commit()
        return secret, key.id, cookie, user.id


def _warm(url: str, key: str, cookie: str) -> None:
    for _ in range(3):  # the first lookup fills the cache, the next ones are served from it
        assert httpx.get(f"{url}/v1/clusters", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        assert httpx.get(f"{url}/ui", cookies={"velyrix_session": cookie}).status_code == 200


def test_the_cache_is_used_and_a_revocation_through_the_api_answers_401_next(served: Served) -> None:
    key, key_id, cookie, _ = _tenant_key_and_session(served.app)
    _warm(served.url, key, cookie)
    assert served.app.state.principal_cache is not None and served.app.state.principal_cache._rows
    if served.app.state.inline_pg is not None:  # PostgreSQL: the lookups were awaited on the loop
        assert served.app.state.inline_pg.counts["inline"] >= 6
    auth = {"Authorization": f"Bearer {key}"}
    assert httpx.delete(f"{served.url}/v1/api-keys/{key_id}", headers=auth).status_code == 200
    refused = httpx.get(f"{served.url}/v1/clusters", headers=auth)
    assert refused.status_code == 401 and refused.json()["code"] == "unauthenticated"


def test_changes_straight_in_the_database_answer_401_on_the_next_request(served: Served) -> None:
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import User

    key, key_id, cookie, user_id = _tenant_key_and_session(served.app)
    _warm(served.url, key, cookie)
    # another process on the same database (a second replica, ``velyrix admin``): its own engine
    other = sa.create_engine(served.app.state.engine.url)
    try:
        with other.begin() as conn:
            conn.execute(sa.update(User).where(User.id == user_id).values(active=False))
        assert httpx.get(f"{served.url}/ui", cookies={"velyrix_session": cookie}).status_code == 401
        auth = {"Authorization": f"Bearer {key}"}
        assert httpx.get(f"{served.url}/v1/volumes", headers=auth).status_code == 200
        with other.begin() as conn:  # the key's rights narrowed: a role change
            narrowed = {"role": "viewer", "scopes": ["clusters:read"]}
            conn.execute(sa.update(models.ApiKey).where(models.ApiKey.id == key_id).values(**narrowed))
        refused = httpx.get(f"{served.url}/v1/volumes", headers=auth)
        assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
        now = dt.datetime.now(dt.UTC)
        with other.begin() as conn:
            conn.execute(sa.update(models.ApiKey).where(models.ApiKey.id == key_id).values(revoked_at=now))
        assert httpx.get(f"{served.url}/v1/clusters", headers=auth).status_code == 401
    finally:
        other.dispose()


def test_a_second_replica_on_the_same_database_sees_a_revocation_at_once(served: Served) -> None:
    from velyrix.ops.service import create_app

    key, key_id, cookie, _ = _tenant_key_and_session(served.app)
    with Served(create_app(str(served.app.state.engine.url))) as replica:
        _warm(served.url, key, cookie)
        _warm(replica.url, key, cookie)
        auth = {"Authorization": f"Bearer {key}"}
        assert httpx.delete(f"{replica.url}/v1/api-keys/{key_id}", headers=auth).status_code == 200
        assert httpx.get(f"{served.url}/v1/clusters", headers=auth).status_code == 401
        csrf_less_logout = httpx.post(f"{served.url}/auth/logout", cookies={"velyrix_session": cookie})
        assert csrf_less_logout.status_code == 403  # refused, the session goes on
        assert httpx.get(f"{replica.url}/ui", cookies={"velyrix_session": cookie}).status_code == 200
        from velyrix.controlplane.identity import sessions

        logout = httpx.post(
            f"{served.url}/auth/logout",
            cookies={"velyrix_session": cookie},
            data={"csrf": sessions.csrf_token(cookie)},
        )
        assert logout.status_code == 200
        assert httpx.get(f"{replica.url}/ui", cookies={"velyrix_session": cookie}).status_code == 401


def test_a_database_without_the_triggers_gets_no_cache(tmp_path: Path) -> None:
    from velyrix.controlplane.db import engine as engine_mod
    from velyrix.controlplane.db import migrate
    from velyrix.controlplane.identity import verified

    url = f"sqlite:///{tmp_path / 'v.db'}"
    migrate.upgrade(url)
    engine = engine_mod.make_engine(url)
    try:
        assert verified.for_engine(engine) is not None
        with engine.begin() as conn:  # what rebuilding the table in a later migration would do
            conn.execute(sa.text("DROP TRIGGER users_credential_generation_0"))
            conn.execute(sa.text("DROP TRIGGER users_credential_generation_1"))
        assert verified.for_engine(engine) is None
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_postgresql_database_without_a_trigger_gets_no_cache_and_still_authenticates(
    pg_server: Any, home: Path
) -> None:
    from fastapi.testclient import TestClient

    from velyrix.controlplane.db import engine as engine_mod
    from velyrix.controlplane.db import migrate
    from velyrix.controlplane.identity import verified
    from velyrix.ops.service import create_app

    url = pg_server.create_database("notrigger")
    migrate.upgrade(url)
    engine = engine_mod.make_engine(url)
    try:
        assert verified.for_engine(engine) is not None
        with engine.begin() as conn:
            conn.execute(sa.text("DROP TRIGGER api_keys_credential_generation ON api_keys"))
        assert verified.for_engine(engine) is None
    finally:
        engine.dispose()
    app = create_app(url)
    key, _, _, _ = _tenant_key_and_session(app)
    with TestClient(app) as client:  # the lookups still run on the loop, each one read afresh
        assert app.state.principal_cache is None and app.state.inline_pg is not None
        assert client.get("/v1/clusters", headers={"Authorization": f"Bearer {key}"}).status_code == 200
        assert app.state.inline_pg.counts["inline"] >= 1
    app.state.engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def migrated(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    from velyrix.controlplane.db import migrate

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'v.db'}"
    else:
        url = request.getfixturevalue("pg_server").create_database(f"gen{tmp_path.name[-12:].replace('-', '')}")
    migrate.upgrade(url)
    return url


def test_the_generation_moves_on_with_each_change_that_takes_rights_away_and_not_otherwise(migrated: str) -> None:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import engine as engine_mod
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import sessions, verified

    engine = engine_mod.make_engine(migrated)
    factory = sa.orm.sessionmaker(engine, expire_on_commit=False)

    def generation() -> int:
        with engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT generation FROM credential_generation WHERE id = 1")).scalar_one())

    try:
        assert verified.for_engine(engine) is not None
        with factory() as s:
            tenant = models.Tenant(name="acme", display_name="acme")
            s.add(tenant)
            s.flush()
            key, _ = principals.issue_key(s, tenant_id=tenant.id, name="owner", role="owner")
            user = User(tenant_id=tenant.id, user_name="alice@acme.example", role="viewer", groups=[], scim={})
            s.add(user)
            s.flush()
            row, _ = sessions.start(s, user, "oidc")
            s.commit()
            start = generation()  # creating credentials takes no right away
            user.display_name = "Alice"
            s.commit()
            assert generation() == start
            principals.revoke_with_children(s, key)
            s.commit()
            assert generation() == start + 1
            sessions.end(s, row.id, "logout")
            s.commit()
            assert generation() == start + 2
            user.role = "admin"
            s.commit()
            assert generation() == start + 3
    finally:
        engine.dispose()


def test_a_session_touch_leaves_the_generation_and_every_other_session_change_moves_it(migrated: str) -> None:
    """Migration 0025: ``last_seen_at`` moving forward (the once-a-minute touch) keeps every cached
    principal; moving it back, ending the session, a second factor, a step-up or a delete move it on."""
    from velyrix.controlplane.db import engine as engine_mod
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import User, UserSession
    from velyrix.controlplane.identity import sessions

    engine = engine_mod.make_engine(migrated)
    factory = sa.orm.sessionmaker(engine, expire_on_commit=False)

    def generation() -> int:
        with engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT generation FROM credential_generation WHERE id = 1")).scalar_one())

    def change(**values: Any) -> int:
        before = generation()
        with engine.begin() as conn:
            conn.execute(sa.update(UserSession).where(UserSession.id == row.id).values(**values))
        return generation() - before

    try:
        with factory() as s:
            tenant = models.Tenant(name="acme", display_name="acme")
            s.add(tenant)
            s.flush()
            user = User(tenant_id=tenant.id, user_name="alice@acme.example", role="viewer", groups=[], scim={})
            s.add(user)
            s.flush()
            row, _ = sessions.start(s, user, "oidc")
            s.commit()
        now = row.last_seen_at
        before = generation()
        with engine.connect() as conn:  # the touch itself, as authentication writes it
            touch = sessions.Checked(None, write=("touch", row.id, None), at=now + dt.timedelta(seconds=60))
            sessions.apply(conn, touch)
        assert generation() == before
        assert change(last_seen_at=now + dt.timedelta(seconds=120)) == 0
        assert change(last_seen_at=now - dt.timedelta(hours=1)) == 1  # back in time: the idle check may refuse
        assert change(mfa_at=now) == 1
        assert change(step_up_at=now) == 1
        assert change(expires_at=now) == 1
        assert change(ended_at=now, end_reason="logout") == 1
        before = generation()
        with engine.begin() as conn:
            conn.execute(sa.delete(UserSession).where(UserSession.id == row.id))
        assert generation() == before + 1
    finally:
        engine.dispose()


def test_every_session_column_but_last_seen_at_moves_the_generation(tmp_path: Path) -> None:
    """A column added to ``user_sessions`` later must be watched too: the SQLite trigger names them all."""
    from velyrix.controlplane.db import migrate
    from velyrix.controlplane.db.models.identity import UserSession

    url = f"sqlite:///{tmp_path / 'v.db'}"
    migrate.upgrade(url)
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            sql = conn.execute(
                sa.text("SELECT sql FROM sqlite_master WHERE name = 'user_sessions_credential_generation_0'")
            ).scalar_one()
    finally:
        engine.dispose()
    watched = {c.strip() for c in sql.split(" OF ", 1)[1].split(" ON ", 1)[0].split(",")}
    assert watched == {c.name for c in UserSession.__table__.columns} - {"last_seen_at"}


def test_a_touch_through_the_api_keeps_the_cache_and_a_logout_still_answers_401_next(served: Served) -> None:
    from velyrix.controlplane.db.models.identity import UserSession
    from velyrix.controlplane.identity import sessions

    key, _, cookie, _ = _tenant_key_and_session(served.app)
    _warm(served.url, key, cookie)
    cache = served.app.state.principal_cache
    with served.app.state.sessionmaker() as s:  # a minute without a request: the next one touches
        row = s.scalars(sa.select(UserSession).where(UserSession.secret_sha256 == sessions.digest(cookie))).one()
        row.last_seen_at = row.last_seen_at - dt.timedelta(seconds=sessions.TOUCH_INTERVAL_S + 1)
        s.commit()
        seen = row.last_seen_at
    _warm(served.url, key, cookie)
    generation = cache._generation
    with served.app.state.sessionmaker() as s:
        assert s.get(UserSession, row.id).last_seen_at > seen  # the touch was written
    _warm(served.url, key, cookie)
    assert cache._generation == generation and len(cache._rows) == 2  # the key's row and the session's stayed
    logout = httpx.post(
        f"{served.url}/auth/logout", cookies={"velyrix_session": cookie}, data={"csrf": sessions.csrf_token(cookie)}
    )
    assert logout.status_code == 200
    assert httpx.get(f"{served.url}/ui", cookies={"velyrix_session": cookie}).status_code == 401


def test_a_kept_principal_serves_the_key_until_it_expires_by_the_clock(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm cache keeps the key's principal with its row; expiry is still checked against now on each
    request, with no change in the database to move the generation on."""
    from velyrix import errors
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.controlplane.identity import resolve
    from velyrix.ops.service import create_app

    app = create_app()
    cache = app.state.principal_cache
    expires = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    with app.state.sessionmaker() as s:
        tenant = models.Tenant(name="acme", display_name="acme")
        s.add(tenant)
        s.flush()
        key, secret = principals.issue_key(s, tenant_id=tenant.id, name="ci", role="viewer", expires_at=expires)
        s.commit()
        key_id = key.id
    with app.state.engine.connect() as conn:
        first = resolve.check(conn, secret, cache=cache).principal
        assert first is not None and first.key_id == key_id
        assert resolve.check(conn, secret, cache=cache).principal is first  # kept with the cached row
        with pytest.raises(errors.AuthenticationError):  # a wrong secret of the right shape
            resolve.check(conn, secret[:-8] + ("A" if secret[-8] != "A" else "B") + secret[-7:], cache=cache)
        monkeypatch.setattr(models, "utcnow", lambda: expires + dt.timedelta(seconds=1))
        with pytest.raises(errors.AuthenticationError):
            resolve.check(conn, secret, cache=cache)
    app.state.engine.dispose()
