"""Reads on the event loop, for SQLite: a short read (a key or session lookup, one row by id) costs
tens of microseconds in-process, less than the hop to a worker thread and back (about 50 us here,
more under load: bench/bench_identity.py). ``Reader`` holds one connection of its own, outside the
API's pool, so an inline read never waits for a pooled connection (``api/pool.py``); it is used by one
caller at a time, and a caller that finds it in use (another event loop of the same process) or the
database busy gets ``None`` and does its read in a worker thread instead. Writes never run here.

In WAL mode a reader waits for no writer; ``BUSY_TIMEOUT_MS`` bounds the rare cases where SQLite
still makes one wait (WAL recovery), after which the caller falls back to a worker thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

from velyrix.controlplane.db import engine as engine_mod

BUSY_TIMEOUT_MS = 20
"""Milliseconds an inline read waits for a lock before it gives up (and the worker thread takes over)."""


class Reader:
    """One SQLite connection for reads on the event loop (``connection``)."""

    def __init__(self, url: sa.URL) -> None:
        self._engine = engine_mod.make_engine(url.render_as_string(hide_password=False), poolclass=sa.pool.StaticPool)
        sa.event.listen(self._engine, "connect", _short_busy_timeout)
        self._lock = threading.Lock()
        self._conn: sa.Connection | None = None
        self.dbapi: Any = None
        """The DB-API (``sqlite3``) connection under ``connection``'s, for statements prepared once
        (``db/prepared.py``); valid while the caller holds ``connection``."""

    @contextlib.contextmanager
    def connection(self) -> Iterator[sa.Connection | None]:
        """The reader's connection, or ``None`` when another caller holds it. Kept open between callers
        (no checkout per read); its read transaction, if one was begun, ends on exit."""
        if not self._lock.acquire(blocking=False):
            yield None
            return
        try:
            conn = self._conn
            if conn is None or conn.closed or conn.invalidated:
                conn = self._conn = self._engine.connect()
                self.dbapi = conn.connection.dbapi_connection
            try:
                yield conn
            finally:
                if conn.in_transaction():
                    conn.rollback()
        finally:
            self._lock.release()

    def close(self) -> None:
        """Close the connection (a later ``connection`` opens a new one)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._engine.dispose()


def _short_busy_timeout(dbapi_conn: object, _record: object) -> None:
    cur = dbapi_conn.cursor()  # type: ignore[attr-defined]
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cur.close()


def reader_for(engine: sa.Engine) -> Reader | None:
    """A ``Reader`` for a SQLite file database, ``None`` otherwise (PostgreSQL is a network round trip:
    its reads stay in worker threads; an in-memory SQLite database exists only in its own connection)."""
    url = engine.url
    if engine.dialect.name != "sqlite" or not url.database or url.database == ":memory:":
        return None
    if "mode=memory" in str(url) or url.database.startswith("file::memory:"):
        return None
    return Reader(url)


Busy = sa.exc.OperationalError
"""What an inline read raises when SQLite stays locked past ``BUSY_TIMEOUT_MS``."""
