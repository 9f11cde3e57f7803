"""Reads on the event loop for PostgreSQL (``api/inline_pg.py``), on a real PostgreSQL server: the key
lookup and the cluster read give the answer of the worker-thread path; with the inline connections all
taken, a backend terminated by the server or a read held up by a lock, the request still gets that
answer (through the thread path), the event loop keeps answering ``/healthz`` meanwhile, and the
connections come back by themselves."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from tests.controlplane import cluster_rows

pytestmark = pytest.mark.postgres


class World:
    def __init__(self, client: Any, key: str, cluster_id: str, url: str) -> None:
        self.client, self.key, self.cluster_id, self.url = client, key, cluster_id, url

    @property
    def reader(self) -> Any:
        return self.client.app.state.inline_pg

    def get(self, path: str | None = None) -> Any:
        path = path or f"/v1/clusters/{self.cluster_id}"
        return self.client.get(path, headers={"Authorization": f"Bearer {self.key}"})


def _seed(url: str) -> tuple[str, str]:
    """A tenant with an owner key and one cluster: (key, cluster id)."""
    from sqlalchemy import orm

    from velyrix.controlplane import specs
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import engine, models

    eng = engine.make_engine(url)
    try:
        with orm.Session(eng) as s:
            tenant = models.Tenant(name="acme", display_name="Acme")
            s.add(tenant)
            s.flush()
            _, secret = principals.issue_key(s, tenant_id=tenant.id, name="owner", role="owner")
            spec = specs.validate(
                specs.ClusterSpecBody(
                    name="c1",
                    region="us-east-1",
                    node_type="hgx-h200-8g",
                    node_count=2,
                    fabric="infiniband-ndr",
                    scheduler="slurm",
                    storage={"parallel_fs_tb": 80},
                )
            )
            cluster = cluster_rows.pending_cluster(tenant.id, spec)
            s.add(cluster)
            s.commit()
            return secret, cluster.id
    finally:
        eng.dispose()


@pytest.fixture(scope="module")
def world(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from fastapi.testclient import TestClient

    from velyrix.ops.service import create_app

    url = pg_server.create_database("inlinepg")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_HOME", str(tmp_path_factory.mktemp("home")))
        app = create_app(url)
        key, cluster_id = _seed(url)
        with TestClient(app) as client:
            yield World(client, key, cluster_id, url)
        app.state.engine.dispose()


def _thread_answer(world: World) -> Any:
    """The same GET with the inline reader switched off: the worker-thread path."""
    state = world.client.app.state
    reader, state.inline_pg = state.inline_pg, None
    try:
        return world.get()
    finally:
        state.inline_pg = reader


def _poll(condition: Any, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_the_get_is_read_on_the_loop_and_answers_as_the_thread_path(world: World) -> None:
    assert world.get().status_code == 200  # the key's principal cached
    before, folded = world.reader.counts["inline"], world.reader.counts["folded"]
    inline = world.get()
    assert inline.status_code == 200
    assert world.reader.counts["inline"] == before + 1  # the row, read with the credential generation
    assert world.reader.counts["folded"] == folded + 1
    assert world.client.app.state.principal_cache._rows  # the verified row, checked by its generation
    threaded = _thread_answer(world)
    assert threaded.status_code == 200 and world.reader.counts["inline"] == before + 1
    assert inline.content == threaded.content and inline.headers["etag"] == threaded.headers["etag"]
    assert inline.json()["spec"]["name"] == "c1"
    missing = world.get("/v1/clusters/clu_0123456789abcdef01234567")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    assert world.client.get("/v1/clusters/clu_x", headers={"Authorization": "Bearer vlx_nope"}).status_code == 401


def test_connections_all_taken_the_request_reads_in_a_thread(world: World) -> None:
    reader = world.reader
    portal = world.client.portal
    held = [portal.call(reader._acquire) for _ in range(reader._size)]
    try:
        assert all(held)
        busy = reader.counts["busy"]
        answer = world.get()
        assert answer.status_code == 200 and answer.content == _thread_answer(world).content
        assert reader.counts["busy"] >= busy + 1
    finally:
        for conn in held:
            portal.call(_release, reader, conn)
    inline = reader.counts["inline"]
    assert world.get().status_code == 200 and reader.counts["inline"] == inline + 1


async def _release(reader: Any, conn: Any) -> None:
    reader._release(conn)


def test_a_terminated_backend_is_survived_and_replaced(world: World) -> None:
    from velyrix.controlplane.api import inline_pg

    reader = world.reader
    assert world.get().status_code == 200
    engine = sa.create_engine(world.url)
    try:
        with engine.connect() as conn:
            pids = conn.execute(
                sa.text("SELECT pid FROM pg_stat_activity WHERE application_name = :name"),
                {"name": inline_pg.APPLICATION_NAME},
            ).scalars()
            killed = [conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": p}).scalar() for p in pids]
        assert killed and all(killed)
        broken = reader.counts["broken"]
        expected = _thread_answer(world).content
        for _ in range(2 * reader._size):  # every connection is found broken in turn
            answer = world.get()
            assert answer.status_code == 200 and answer.content == expected
        assert reader.counts["broken"] > broken
        _poll(lambda: reader._open == reader._size and len(reader._idle) == reader._size, "the reopened connections")
        inline = reader.counts["inline"]
        assert world.get().content == expected and reader.counts["inline"] == inline + 1
    finally:
        engine.dispose()


def test_a_read_held_up_by_a_lock_times_out_to_a_thread_while_the_loop_answers(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from velyrix.controlplane.api import inline_pg

    monkeypatch.setattr(inline_pg, "READ_TIMEOUT_S", 0.2)
    reader = world.reader
    expected = world.get()
    engine = sa.create_engine(world.url)
    answers: list[Any] = []
    try:
        with engine.connect() as locker:
            locker.execute(sa.text("LOCK TABLE clusters IN ACCESS EXCLUSIVE MODE"))  # as a migration would
            timeouts = reader.counts["timeout"]
            pending = threading.Thread(target=lambda: answers.append(world.get()))
            pending.start()
            _poll(lambda: reader.counts["timeout"] > timeouts, "the inline read to time out")
            for _ in range(5):  # the loop is free: the probe answers at once
                assert world.client.get("/healthz").status_code == 200
            assert not answers  # the held-up read waits in its worker thread, not on the loop
            locker.rollback()  # the lock goes
        pending.join(timeout=30)
        assert answers and answers[0].status_code == 200 and answers[0].content == expected.content
        _poll(lambda: len(reader._idle) == reader._size, "the connection replaced")
    finally:
        engine.dispose()


def test_the_same_app_served_by_a_second_server_reads_there_in_threads(world: World) -> None:
    import httpx
    import uvicorn

    from velyrix.testing import postgres

    reader, port = world.reader, postgres.free_port()
    server = uvicorn.Server(uvicorn.Config(world.client.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        _poll(lambda: server.started, "the second server")
        other = reader.counts["other_loop"]
        url = f"http://127.0.0.1:{port}/v1/clusters/{world.cluster_id}"
        answer = httpx.get(url, headers={"Authorization": f"Bearer {world.key}"})
        assert answer.status_code == 200 and answer.content == _thread_answer(world).content
        assert reader.counts["other_loop"] >= other + 1  # the key check (when not cached) and the read
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    inline = reader.counts["inline"]  # the second server's shutdown left the first loop's connections alone
    assert world.get().status_code == 200 and reader.counts["inline"] == inline + 1


def _statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL of every statement the inline connections send from now on."""
    from velyrix.controlplane.api import pg_wire

    sent: list[str] = []
    rows = pg_wire.rows

    async def counted(conn: Any, key: Any) -> Any:
        sent.append(key[0])
        return await rows(conn, key)

    monkeypatch.setattr(pg_wire, "rows", counted)
    return sent


def test_a_warm_key_get_is_one_statement_that_also_reads_the_generation(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert world.get().status_code == 200  # the key's principal cached
    sent = _statements(monkeypatch)
    answer = world.get()
    assert answer.status_code == 200 and answer.content == _thread_answer(world).content
    assert len(sent) == 1 and sent[0].startswith("SELECT (SELECT generation FROM credential_generation")
    sent.clear()
    missing = world.get("/v1/clusters/clu_0123456789abcdef01234567")  # no row to carry it: read on its own
    assert missing.status_code == 404 and len(sent) == 2


def _other_key(world: World, role: str = "viewer", **columns: Any) -> tuple[str, str]:
    """A new key of the tenant of the world's cluster: (secret, id)."""
    from sqlalchemy import orm

    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import engine, models

    eng = engine.make_engine(world.url)
    try:
        with orm.Session(eng) as s:
            tenant_id = s.get(models.Cluster, world.cluster_id).tenant_id
            key, secret = principals.issue_key(s, tenant_id=tenant_id, name=f"k-{role}-{len(columns)}", role=role)
            for name, value in columns.items():
                setattr(key, name, value)
            s.commit()
            return secret, key.id
    finally:
        eng.dispose()


def _update_key(world: World, key_id: str, **values: Any) -> None:
    """``values`` written to the key's row straight in the database (another process: its own engine)."""
    from velyrix.controlplane.db import models

    engine = sa.create_engine(world.url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.update(models.ApiKey).where(models.ApiKey.id == key_id).values(**values))
    finally:
        engine.dispose()


def test_a_revocation_or_narrowing_answers_on_the_next_folded_read(world: World) -> None:
    import datetime as dt

    secret, key_id = _other_key(world)
    auth = {"Authorization": f"Bearer {secret}"}
    one, page = f"/v1/clusters/{world.cluster_id}", "/v1/clusters"
    for path in (one, page, one, page):  # cached, then served pending with the generation folded in
        assert world.client.get(path, headers=auth).status_code == 200
    moved = world.reader.counts["moved"]
    _update_key(world, key_id, scopes=["volumes:read"], role="viewer")  # its rights narrowed
    refused = world.client.get(one, headers=auth)
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert world.reader.counts["moved"] == moved + 1  # the read that came with the old generation: discarded
    _update_key(world, key_id, scopes=["clusters:read"])
    for path in (one, page, one, page):
        assert world.client.get(path, headers=auth).status_code == 200
    _update_key(world, key_id, revoked_at=dt.datetime.now(dt.UTC))
    assert world.client.get(page, headers=auth).status_code == 401
    assert world.client.get(one, headers=auth).status_code == 401


def test_a_cached_key_past_its_expiry_answers_401_without_a_change_in_the_database(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datetime as dt

    from velyrix.controlplane.db import models

    expires = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    secret, _ = _other_key(world, expires_at=expires)
    auth = {"Authorization": f"Bearer {secret}"}
    for _ in range(2):
        assert world.client.get(f"/v1/clusters/{world.cluster_id}", headers=auth).status_code == 200
    monkeypatch.setattr(models, "utcnow", lambda: expires + dt.timedelta(seconds=1))
    assert world.client.get(f"/v1/clusters/{world.cluster_id}", headers=auth).status_code == 401


def test_a_pending_key_whose_reads_go_to_a_thread_is_checked_there(world: World) -> None:
    """Every inline connection taken: the pending key is authenticated in a worker thread before its read
    (a revoked one answers 401 there), with a database slot."""
    import datetime as dt

    secret, key_id = _other_key(world)
    auth = {"Authorization": f"Bearer {secret}"}
    for _ in range(2):
        assert world.client.get(f"/v1/clusters/{world.cluster_id}", headers=auth).status_code == 200
    expected = _thread_answer(world).content
    reader, portal = world.reader, world.client.portal
    held = [portal.call(reader._acquire) for _ in range(reader._size)]
    try:
        answer = world.client.get(f"/v1/clusters/{world.cluster_id}", headers=auth)
        assert answer.status_code == 200 and answer.content == expected
        _update_key(world, key_id, revoked_at=dt.datetime.now(dt.UTC))
        assert world.client.get(f"/v1/clusters/{world.cluster_id}", headers=auth).status_code == 401
    finally:
        for conn in held:
            portal.call(_release, reader, conn)
