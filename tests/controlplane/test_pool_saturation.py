"""A saturated database pool answers 503 problem+json with Retry-After (after a bounded wait) instead of
stalling the event loop, and ``/healthz`` keeps answering meanwhile: a real uvicorn on loopback, a SQLite
file with a pool of 3 connections (overflow 0: one request slot, ``db/pooling.py`` RESERVE = 2) and a
0.3 s wait; the cluster list, read on the event loop without a slot, answers meanwhile. Nothing here is
timed: each step waits for its condition."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from velyrix.testing import postgres


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str, str]]:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.ops.service import create_app

    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_HOME", str(home))
        mp.setenv("VELYRIX_SIGNING_KEY_DIR", str(home / "keys"))
        mp.setenv("VELYRIX_DB_POOL_SIZE", "3")
        mp.setenv("VELYRIX_DB_MAX_OVERFLOW", "0")
        mp.setenv("VELYRIX_DB_POOL_WAIT_S", "0.3")
        app = create_app(f"sqlite:///{home / 'velyrix.db'}")
    with app.state.sessionmaker() as s:
        tenant = models.Tenant(name="acme", display_name="ACME")
        s.add(tenant)
        s.flush()
        _, secret = principals.issue_key(s, tenant_id=tenant.id, name="owner", role="owner")
        s.commit()
    port = postgres.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    yield app, f"http://127.0.0.1:{port}", secret
    server.should_exit = True
    thread.join(timeout=30)
    app.state.engine.dispose()


def _busy(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "database_busy"
    assert int(response.headers["Retry-After"]) > 0


def test_a_pool_held_by_others_answers_503_with_retry_after_and_healthz_still_answers(
    served: tuple[Any, str, str],
) -> None:
    app, url, secret = served
    headers = {"Authorization": f"Bearer {secret}"}
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/v1/volumes", headers=headers).status_code == 200
        held = [app.state.engine.connect() for _ in range(3)]  # every connection of the pool
        try:
            _busy(client.get("/v1/volumes", headers=headers))
            assert client.get("/healthz").json() == {"status": "ok"}
            assert client.get("/v1/clusters", headers=headers).status_code == 200  # read on the loop, no pool
            assert client.get("/readyz").status_code == 503  # the database gives no connection
        finally:
            for conn in held:
                conn.close()
        assert client.get("/v1/volumes", headers=headers).status_code == 200
        assert client.get("/readyz").status_code == 200


def test_requests_beyond_the_api_slots_answer_503_while_one_waits_on_the_database(
    served: tuple[Any, str, str],
) -> None:
    """One request holds the only slot, waiting for SQLite's write lock (taken here); the next waits its
    0.3 s for the slot and answers 503; ``/healthz`` answers throughout; once the lock goes, all is served."""
    app, url, secret = served
    headers = {"Authorization": f"Bearer {secret}"}
    # the key's last use written now, not by a request of the locked stretch (where its write would hold
    # that request's slot through SQLite's busy timeout, and the POST would find no slot)
    assert httpx.get(f"{url}/v1/volumes", headers=headers).status_code == 200
    lock = sqlite3.connect(Path(app.state.engine.url.database), timeout=30)
    lock.execute("BEGIN IMMEDIATE")  # the write lock: the POST below waits for it holding its slot
    posted: list[httpx.Response] = []
    volume = {"name": "scratch", "region": "us-east-1", "tier": "block", "size_tb": 1}
    writer = threading.Thread(
        target=lambda: posted.append(httpx.post(f"{url}/v1/volumes", headers=headers, json=volume, timeout=30))
    )
    try:
        writer.start()
        with httpx.Client(base_url=url, timeout=30) as client:
            while True:  # until the POST holds the slot
                listed = client.get("/v1/volumes", headers=headers)
                if listed.status_code == 503:
                    break
                assert listed.status_code == 200 and writer.is_alive(), listed.text
            _busy(listed)
            assert client.get("/healthz").json() == {"status": "ok"}
            assert client.get("/v1/clusters", headers=headers).status_code == 200  # lazy: no slot taken
    finally:
        lock.rollback()
        lock.close()
        writer.join(timeout=30)
    # the POST waited on the lock within SQLite's busy timeout: created, or refused as unavailable
    assert posted and posted[0].status_code in (201, 503), posted[0].text
    assert posted[0].status_code == 201 or "Retry-After" in posted[0].headers
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/v1/volumes", headers=headers).status_code == 200
