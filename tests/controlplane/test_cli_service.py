"""``velyrix db upgrade``, ``velyrix admin create-tenant``, ``velyrix login`` and the CLI client,
against a SQLite database under a temporary VELYRIX_HOME and a real uvicorn server."""

from __future__ import annotations

import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.conftest import Recorder, assert_each_mutation_audited_once, cluster_body, enroll_fleet
from velyrix import errors
from velyrix.testing import postgres


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("VELYRIX_DATABASE_URL", raising=False)
    monkeypatch.delenv("VELYRIX_ENDPOINT", raising=False)
    monkeypatch.delenv("VELYRIX_API_KEY", raising=False)
    return tmp_path / "home"


@pytest.fixture
def served(home: Path) -> Iterator[str]:
    import uvicorn

    from velyrix.controlplane.api import create_app

    application = create_app()
    enroll_fleet(application.state.sessionmaker)  # a fleet to sell from: capacity comes from the node table
    app = Recorder(application)
    port = postgres.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)
    assert_each_mutation_audited_once(app)
    app.state.engine.dispose()


def test_db_upgrade_creates_the_sqlite_database_in_wal_mode(velyrix: Callable[..., Any], home: Path) -> None:
    result = velyrix("db", "upgrade")
    assert result.exit_code == 0, result.stderr
    from velyrix.controlplane.db import migrate

    assert f"revision {migrate.head()}" in result.stdout
    import sqlite3

    with sqlite3.connect(home / "velyrix.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_create_tenant_prints_a_working_owner_key_then_login_and_apply(
    velyrix: Callable[..., Any], home: Path, served: str
) -> None:
    created = velyrix("admin", "create-tenant", "acme")
    assert created.exit_code == 0, created.stderr
    secret = created.stdout.strip().splitlines()[-1]
    assert secret.startswith("vlx_")
    again = velyrix("admin", "create-tenant", "acme")
    assert again.exit_code == 2 and "exists" in again.stderr

    login = velyrix("login", "--endpoint", served, "--api-key", secret)
    assert login.exit_code == 0, login.stderr
    creds = home / "credentials.json"
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600 and secret in creds.read_text()

    from velyrix.cli import client

    api = client.Client.from_login()
    first = api.apply_cluster(cluster_body("pretrain", node_count=2))
    second = api.apply_cluster(cluster_body("pretrain", node_count=3))
    assert first["id"] == second["id"] and second["node_count"] == 3 and second["version"] == 2
    (why,) = [c for c in second["status"]["conditions"] if c["type"] == "Reconciling"]  # velyrix server alone
    assert why["status"] == "False" and why["reason"] == "NoReconciler" and "velyrix up" in why["message"]
    assert api.destroy_cluster("pretrain")["status"]["phase"] == "Deleting"
    with pytest.raises(errors.RemoteError) as info:
        api.post("/v1/clusters", cluster_body("pretrain") | {"node_type": "nope"})
    assert info.value.code == "spec_invalid" and info.value.http_status == 422 and info.value.user_error


def test_login_with_a_wrong_key_fails_cleanly(velyrix: Callable[..., Any], home: Path, served: str) -> None:
    from velyrix.controlplane.auth import keys

    result = velyrix("login", "--endpoint", served, "--api-key", keys.generate())
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "revoked API key" in result.stderr
    assert not (home / "credentials.json").exists()


def test_client_without_login_says_how_to_log_in(home: Path) -> None:
    from velyrix.cli import client

    with pytest.raises(errors.NotLoggedInError) as info:
        client.Client.from_login()
    assert "velyrix login" in (info.value.hint or "")


def test_provider_key_bootstrap(velyrix: Callable[..., Any], home: Path) -> None:
    result = velyrix("admin", "create-provider-key", "noc-alice", "--role", "operator")
    assert result.exit_code == 0 and result.stdout.strip().splitlines()[-1].startswith("vlx_")
    bad = velyrix("admin", "create-provider-key", "x", "--role", "owner")
    assert bad.exit_code == 2 and "operator" in bad.stderr
