"""Storage faults answer 503 problem+json with Retry-After, ``/readyz`` says not ready, nothing
acknowledged is lost and the service recovers by itself: a real PostgreSQL stopped and started again
(``PostgresServer.pause``/``resume``), and a SQLite database on a small tmpfs filled to the last byte."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from velyrix.testing import postgres


def _world(client: Any, app: Any) -> tuple[str, str]:
    """A tenant with an owner key, straight in the database: (tenant id, secret)."""
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models

    with app.state.sessionmaker() as s:
        t = models.Tenant(name="faults", display_name="Faults")
        s.add(t)
        s.flush()
        _row, secret = principals.issue_key(s, tenant_id=t.id, name="owner", role="owner")
        s.commit()
        return t.id, secret


def _volume(client: Any, secret: str, name: str, **extra: Any) -> Any:
    body = {"name": name, "region": "us-east-1", "tier": "object", "size_tb": 1}
    return client.post("/v1/volumes", json=body, headers={"Authorization": f"Bearer {secret}"} | extra)


def _assert_503(resp: Any) -> None:
    assert resp.status_code == 503, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    assert resp.json()["code"] == "service_unavailable" and int(resp.headers["Retry-After"]) > 0


def _wait_ready(client: Any, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if client.get("/readyz").status_code == 200:
            return
        time.sleep(0.2)
    pytest.fail("the API did not become ready again")


def _names(client: Any, secret: str) -> set[str]:
    resp = client.get("/v1/volumes", params={"limit": 200}, headers={"Authorization": f"Bearer {secret}"})
    assert resp.status_code == 200, resp.text
    return {v["name"] for v in resp.json()["items"]}


@pytest.mark.postgres
def test_a_postgresql_outage_answers_503_and_recovers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from velyrix.controlplane.api.app import create_app

    if postgres.find_bin_dir() is None:
        pytest.skip("PostgreSQL server binaries not installed")
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    with postgres.PostgresServer.start() as pg:
        app = create_app(pg.create_database("outage"))
        client = TestClient(app, raise_server_exceptions=False)
        _tenant, secret = _world(client, app)
        assert _volume(client, secret, "before").status_code == 201
        pg.pause()
        try:
            _assert_503(_volume(client, secret, "during"))
            _assert_503(client.get("/v1/volumes", headers={"Authorization": f"Bearer {secret}"}))
            _assert_503(client.get("/v1/volumes"))  # unauthenticated: the key check needs the database too
            _assert_503(client.post("/v1/volumes", json={}))
            ready = client.get("/readyz")
            assert ready.status_code == 503 and ready.headers["Retry-After"]
            assert client.get("/healthz").status_code == 200
        finally:
            pg.resume()
        _wait_ready(client)
        assert _volume(client, secret, "after").status_code == 201
        assert _names(client, secret) == {"before", "after"}
        app.state.engine.dispose()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted for the test (root only; skipped elsewhere)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte with one file (unbuffered writes); returns it."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_answers_503_loses_nothing_and_recovers(
    small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from velyrix.controlplane.api.app import create_app

    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    app = create_app(f"sqlite:///{small_disk / 'velyrix.db'}")
    client = TestClient(app, raise_server_exceptions=False)
    _tenant, secret = _world(client, app)
    acknowledged = set()
    for i in range(3):
        assert _volume(client, secret, f"before-{i}").status_code == 201
        acknowledged.add(f"before-{i}")
    filler = _fill(small_disk)
    statuses = []
    for i in range(400):  # pages with room left absorb a few writes; then the disk is full
        resp = _volume(client, secret, f"full-{i}", **{"Idempotency-Key": "k" * 200 + str(i)})
        statuses.append(resp.status_code)
        if resp.status_code == 201:
            acknowledged.add(f"full-{i}")
        else:
            _assert_503(resp)
            break
    assert 503 in statuses and 500 not in statuses, statuses
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["database"] == "disk full"
    filler.unlink()
    _wait_ready(client)
    assert _volume(client, secret, "after").status_code == 201
    assert _names(client, secret) == acknowledged | {"after"}
    app.state.engine.dispose()
