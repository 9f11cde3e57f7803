"""Several ``velyrix server`` replicas on one PostgreSQL each publish audit checkpoints (the publisher thread of
every API process, ``POST /v1/audit-log/checkpoints``): the log gets one checkpoint per tree size, and a
publisher that comes second answers the first one's checkpoint (``controlplane/audit/checkpoints.py``).

The race is made deterministic: the second replica publishes from inside the first one's commit, after the
first read the log and its latest checkpoint and before its checkpoint is stored; the first commits once the
second has either finished or is waiting on the database for the first one's claim."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from velyrix.controlplane import audit
from velyrix.controlplane.audit import checkpoints
from velyrix.controlplane.db import engine, migrate
from velyrix.controlplane.db.models import evidence as ev
from velyrix.controlplane.reconcile import signing
from velyrix.ops.service import create_app

_n = itertools.count()
WAIT_S = 60.0
"""How long the first replica waits for the second to finish or block (a bound on a hang, not a timing)."""


@pytest.fixture(autouse=True)
def _keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))


@pytest.fixture
def replicas(pg_server: Any) -> Iterator[tuple[Any, Any]]:
    """Two API apps (each its own engine and publisher) on one PostgreSQL database."""
    url = pg_server.create_database(f"audit_replicas{next(_n)}")
    first, second = create_app(url), create_app(url, migrate=False)
    yield first, second
    first.state.engine.dispose()
    second.state.engine.dispose()


def _someone_waits_for_an_advisory_lock(app: Any) -> bool:
    with app.state.engine.connect() as conn:
        query = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        return bool(conn.execute(sa.text(query)).scalar())


def _during_first_commit(first: Any, second_publishes: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Arrange that the first app's next session commit runs ``second_publishes`` in another thread first, and
    goes on once that thread finished or waits for a lock; returns the thread and the list its result lands in."""
    got: list[Any] = []
    worker = threading.Thread(target=lambda: got.append(second_publishes()), daemon=True)

    def before_commit(_session: Any) -> None:
        worker.start()
        deadline = time.monotonic() + WAIT_S
        while worker.is_alive() and not _someone_waits_for_an_advisory_lock(first):
            assert time.monotonic() < deadline, "the second publisher neither finished nor waited"
            time.sleep(0.02)

    sa.event.listen(first.state.sessionmaker, "before_commit", before_commit, once=True)
    return worker, got


def _checkpoints_by_size(app: Any) -> dict[int, int]:
    with app.state.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT tree_size, count(*) FROM audit_checkpoints GROUP BY tree_size")).all()
    return {int(size): int(count) for size, count in rows}


@pytest.mark.postgres
def test_two_replicas_publishers_at_once_store_one_checkpoint_of_the_tree(replicas: tuple[Any, Any]) -> None:
    first, second = replicas
    first_publisher = checkpoints.Publisher(first.state.sessionmaker, 60.0)
    second_publisher = checkpoints.Publisher(second.state.sessionmaker, 60.0)
    worker, got = _during_first_commit(first, second_publisher.tick)
    published = first_publisher.tick()
    worker.join(WAIT_S)
    assert published is not None
    assert got == [None]  # the second one found the first one's checkpoint: nothing new to publish
    assert list(_checkpoints_by_size(first).values()) == [1]
    assert first_publisher.tick() is None and second_publisher.tick() is None


@pytest.mark.postgres
def test_a_second_publisher_answers_the_checkpoint_the_first_one_stored(replicas: tuple[Any, Any]) -> None:
    """As ``POST /v1/audit-log/checkpoints`` on two replicas at once: both answer the same signed document."""
    first, second = replicas

    def second_publishes() -> dict[str, Any]:
        with second.state.sessionmaker() as s:
            row = checkpoints.publish(s)
            s.commit()
            return {"id": row.id, "document": row.document}

    worker, got = _during_first_commit(first, second_publishes)
    with first.state.sessionmaker() as s:
        row = checkpoints.publish(s)
        s.commit()
        mine = {"id": row.id, "document": row.document}
    worker.join(WAIT_S)
    assert got == [mine]
    assert signing.verify(mine["document"], checkpoints.public_key()).valid
    assert list(_checkpoints_by_size(first).values()) == [1]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'cp.db'}"
    return str(request.getfixturevalue("pg_server").create_database(f"audit_sole{next(_n)}"))


def test_force_signs_a_size_again_and_the_database_refuses_a_second_sole_checkpoint(url: str) -> None:
    app = create_app(url)
    try:
        with app.state.sessionmaker() as s:
            first = checkpoints.publish(s)
            s.commit()
            assert checkpoints.publish(s).id == first.id  # the log has not grown: the same checkpoint
            s.commit()
            forced = checkpoints.publish(s, force=True)
            s.commit()
            assert forced.id != first.id and forced.tree_size == first.tree_size
            assert signing.verify(forced.document, checkpoints.public_key()).valid
            assert checkpoints.latest(s).id == forced.id
            assert (first.sole, forced.sole) == (True, None)
            size = first.tree_size
            s.add(ev.AuditCheckpoint(tree_size=size, root_hash=first.root_hash, document={}, sole=True))
            with pytest.raises(sa_exc.IntegrityError):
                s.commit()
        assert _checkpoints_by_size(app) == {size: 2}
    finally:
        app.state.engine.dispose()


def test_an_upgrade_keeps_checkpoints_that_replicas_signed_twice(url: str) -> None:
    """A database at 0029 where two replicas stored two checkpoints of one size: 0032 applies and publishing
    goes on from there."""
    eng = engine.make_engine(url)
    try:
        migrate.upgrade(url, revision="0029", engine=eng)
        with eng.begin() as conn:
            size = int(conn.execute(sa.text("SELECT tree_size FROM audit_log_head WHERE id = 1")).scalar_one())
            for name in ("ack_a", "ack_b"):
                conn.execute(
                    sa.text(
                        "INSERT INTO audit_checkpoints (id, tree_size, root_hash, at, document)"
                        " VALUES (:id, :size, :root, '2026-12-01 10:00:00', '{}')"
                    ),
                    {"id": name, "size": size, "root": "00" * 32},
                )
    finally:
        eng.dispose()
    app = create_app(url)
    try:
        with app.state.sessionmaker() as s:
            assert checkpoints.publish(s).id == "ack_b"  # the log has not grown: the latest stored one
            s.commit()
            info = audit.RequestInfo(request_id="req_more", source_address=None, method="POST", path="/v1/x")
            audit.record(s, info, None, action="fixture.more", target="things/more")
            s.commit()
            grown = checkpoints.publish(s)
            s.commit()
            assert (grown.tree_size, grown.sole) == (size + 1, True)
        assert _checkpoints_by_size(app) == {size: 2, size + 1: 1}
    finally:
        app.state.engine.dispose()
