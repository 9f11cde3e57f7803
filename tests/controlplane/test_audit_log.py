"""The tamper-evident audit log, end to end on SQLite and PostgreSQL: a real uvicorn server, the ``velyrix
audit`` commands over HTTP, and someone with the database who drops the append-only triggers and deletes
or edits audit rows. ``velyrix audit verify`` must name the event; an inclusion proof verifies offline."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from velyrix.testing import postgres

_n = itertools.count()


@dataclass
class Log:
    """A served control plane with a tenant and a provider auditor, and a way into its database."""

    url: str
    engine: sa.Engine
    app: Any
    auditor: str
    tenant_owner: str
    events: list[str]

    def sql(self, *statements: str) -> None:
        with self.engine.begin() as conn:
            for stmt in statements:
                conn.execute(sa.text(stmt))


def _drop_event_triggers(log: Log) -> None:
    if log.engine.dialect.name == "postgresql":
        log.sql("DROP TRIGGER audit_events_no_update_delete ON audit_events")
    else:
        log.sql("DROP TRIGGER audit_events_no_update", "DROP TRIGGER audit_events_no_delete")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Log, str]]:
    import uvicorn
    from fastapi.testclient import TestClient

    from velyrix.controlplane import audit
    from velyrix.controlplane.api import create_app
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'log.db'}"
    else:
        url = request.getfixturevalue("pg_server").create_database(f"auditlog{next(_n)}")
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    app = create_app(url)
    with app.state.sessionmaker() as s:
        tenant = models.Tenant(name=f"acme{next(_n)}")
        s.add(tenant)
        s.flush()
        _, owner = principals.issue_key(s, tenant_id=tenant.id, name="owner", role="owner")
        _, auditor = principals.issue_key(s, tenant_id=None, name="noc-auditor", role="auditor")
        info = audit.RequestInfo(request_id="req_fixture", source_address="127.0.0.1", method="POST", path="/v1/x")
        events = [
            audit.record(s, info, None, action=f"fixture.{i}", target=f"things/{i}", tenant_id=tenant.id).id
            for i in range(13)
        ]
        s.commit()
    port = postgres.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    with TestClient(app):  # runs the app's lifespan (the checkpoint publisher) for the test
        thread.start()
        while not server.started:
            time.sleep(0.02)
        monkeypatch.setenv("VELYRIX_ENDPOINT", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("VELYRIX_API_KEY", auditor)
        yield Log(url, app.state.engine, app, auditor, owner, events), f"http://127.0.0.1:{port}"
        server.should_exit = True
        thread.join(timeout=10)
    app.state.engine.dispose()


def test_an_untouched_log_verifies_and_grows_consistently(served: tuple[Log, str], velyrix: Callable[..., Any]) -> None:
    log, _ = served
    first = velyrix("audit", "checkpoint")
    assert first.exit_code == 0, first.stderr
    assert "checkpoint: 13 events" in first.stdout  # the audit event of that POST comes after it
    ok = velyrix("audit", "verify")
    assert ok.exit_code == 0 and "log holds" in ok.stdout and "13 events" in ok.stdout, ok.stdout + ok.stderr
    again = velyrix("audit", "checkpoint")  # consistency proof from 13 to 14 checked by the CLI
    assert again.exit_code == 0 and "14 events" in again.stdout, again.stderr


@pytest.mark.parametrize("tamper", ["delete", "edit"])
def test_dropping_the_trigger_and_deleting_or_editing_a_row_is_named(
    served: tuple[Log, str], velyrix: Callable[..., Any], tamper: str
) -> None:
    log, _ = served
    assert velyrix("audit", "checkpoint").exit_code == 0
    victim = log.events[5]
    _drop_event_triggers(log)
    if tamper == "delete":
        log.sql(f"DELETE FROM audit_events WHERE id = '{victim}'")
    else:
        log.sql(f"UPDATE audit_events SET outcome = 'denied', status_code = 403 WHERE id = '{victim}'")
    result = velyrix("audit", "verify")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert f"event {victim} (leaf 5)" in result.stdout
    assert ("missing: its row was deleted" if tamper == "delete" else "was altered") in result.stdout


def test_rewriting_the_stored_hashes_too_is_caught_by_the_signed_checkpoint(
    served: tuple[Log, str], velyrix: Callable[..., Any]
) -> None:
    """An attacker who edits an event and recomputes its leaf hash still cannot match the signed root."""
    from velyrix.controlplane.audit import log as log_mod
    from velyrix.controlplane.audit import merkle

    log, _ = served
    assert velyrix("audit", "checkpoint").exit_code == 0
    victim = log.events[8]
    _drop_event_triggers(log)
    if log.engine.dialect.name == "postgresql":
        log.sql("DROP TRIGGER audit_leaves_append_only ON audit_leaves")
    else:
        log.sql("DROP TRIGGER audit_leaves_no_update")
    log.sql(f"UPDATE audit_events SET actor = 'someone-else' WHERE id = '{victim}'")
    with log.engine.connect() as conn:
        row = conn.execute(sa.text(f"SELECT * FROM audit_events WHERE id = '{victim}'")).mappings().one()
        forged = merkle.leaf_hash(log_mod.canonical_row(dict(row), 8))
    with log.engine.begin() as conn:
        conn.execute(sa.text("UPDATE audit_leaves SET leaf_hash = :h WHERE idx = 8"), {"h": forged})
    result = velyrix("audit", "verify")
    assert result.exit_code == 1
    assert "differs from the checkpoint of size 13" in result.stdout and "leaves 0..12" in result.stdout


def test_a_log_copy_missing_a_leaf_names_its_neighbours(
    served: tuple[Log, str], velyrix: Callable[..., Any], tmp_path: Path
) -> None:
    log, _ = served
    assert velyrix("audit", "checkpoint").exit_code == 0
    copy = tmp_path / "copy.jsonl"
    assert velyrix("audit", "export", "--out", str(copy)).exit_code == 0
    assert velyrix("audit", "verify", "--log", str(copy)).exit_code == 0
    lines = copy.read_text().splitlines()
    copy.write_text("\n".join(lines[:3] + lines[4:]) + "\n")
    result = velyrix("audit", "verify", "--log", str(copy))
    assert result.exit_code == 1
    assert f"leaf 3 is missing from the log (after {log.events[2]}, before {log.events[4]})" in result.stdout


def test_a_tenant_verifies_an_inclusion_proof_offline(
    served: tuple[Log, str], velyrix: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, _ = served
    monkeypatch.setenv("VELYRIX_API_KEY", log.tenant_owner)
    key = velyrix("audit", "verify")  # pins the key; a tenant sees its own events and the others' hashes
    assert key.exit_code == 0, key.stdout
    from velyrix.controlplane.audit import checkpoints

    public_key = checkpoints.public_key()
    proof = tmp_path / "proof.json"
    made = velyrix("audit", "prove", log.events[11], "--out", str(proof))
    assert made.exit_code == 0, made.stderr
    monkeypatch.setenv("VELYRIX_ENDPOINT", "http://127.0.0.1:9")  # offline: nothing listens there
    ok = velyrix("audit", "verify-proof", str(proof), "--public-key", public_key)
    assert ok.exit_code == 0 and f"event {log.events[11]} is leaf 11" in ok.stdout, ok.stdout + ok.stderr
    bundle = json.loads(proof.read_text())
    bundle["event"]["outcome"] = "denied"
    proof.write_text(json.dumps(bundle))
    bad = velyrix("audit", "verify-proof", str(proof), "--public-key", public_key)
    assert bad.exit_code == 1 and "altered" in bad.stdout
    other = velyrix("audit", "verify-proof", str(proof), "--public-key", "A" * 43 + "=")
    assert other.exit_code == 1 and "another key" in other.stdout


def test_checkpoints_are_published_at_the_interval_when_the_log_grew(served: tuple[Log, str]) -> None:
    from velyrix.controlplane import audit
    from velyrix.controlplane.audit import checkpoints

    log, _ = served
    publisher = log.app.state.audit_checkpoints
    assert publisher.tick() is None  # published at start; nothing new since
    with log.app.state.sessionmaker() as s:
        info = audit.RequestInfo(request_id="req_more", source_address=None, method="POST", path="/v1/x")
        audit.record(s, info, None, action="fixture.more", target="things/more")
        s.commit()
    document = publisher.tick()
    assert document is not None and document["report"]["tree_size"] == 14
    with log.app.state.sessionmaker() as s:
        assert checkpoints.latest(s).tree_size == 14


def test_concurrent_writers_get_dense_leaves_that_verify(served: tuple[Log, str]) -> None:
    """Four threads commit audit events at once: every event is one leaf, indexes 0..n-1, roots match."""
    from concurrent.futures import ThreadPoolExecutor

    from velyrix.controlplane import audit
    from velyrix.controlplane.audit import checkpoints, verify
    from velyrix.controlplane.audit import log as log_mod

    log, _ = served

    def write(worker: int) -> None:
        for i in range(10):
            with log.app.state.sessionmaker() as s:
                info = audit.RequestInfo(request_id=f"req_{worker}_{i}", source_address=None, method="POST", path="/")
                audit.record(s, info, None, action="fixture.concurrent", target=f"w{worker}/{i}")
                s.commit()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(4)))
    with log.app.state.sessionmaker() as s:
        document = checkpoints.publish(s)
        s.commit()
        entries = log_mod.entries(s, 0, 1000)
    assert [e["index"] for e in entries] == list(range(53))
    assert verify.check(entries, [document.document]).ok


def test_events_written_before_the_log_existed_become_its_first_leaves(tmp_path: Path) -> None:
    from velyrix.controlplane.audit import log as log_mod
    from velyrix.controlplane.audit import merkle
    from velyrix.controlplane.db import engine, migrate

    url = f"sqlite:///{tmp_path / 'old.db'}"
    eng = engine.make_engine(url)
    migrate.upgrade(url, revision="0003", engine=eng)
    with eng.begin() as conn:
        for i in range(5):
            conn.execute(
                sa.text(
                    "INSERT INTO audit_events (id, at, actor, action, target, request_id, outcome, status_code, detail)"
                    " VALUES (:id, :at, 'cli', 'old.event', 't', 'r', 'success', 200, '{\"n\": 1}')"
                ),
                {"id": f"aud_00000000000{i}", "at": f"2026-11-30 10:00:0{i}.000000"},
            )
    migrate.upgrade(url, engine=eng)
    with eng.connect() as conn:
        rows = conn.execute(sa.text("SELECT * FROM audit_events ORDER BY id")).mappings().all()
        leaves = [merkle.leaf_hash(log_mod.canonical_row(dict(r), i)) for i, r in enumerate(rows)]
        assert log_mod.tree_size(conn) == 5
        assert log_mod.root(conn, 5) == merkle.root_of(leaves)
    eng.dispose()
