"""Engines and sessions: SQLite (WAL mode) under ``$VELYRIX_HOME`` by default, PostgreSQL through
``VELYRIX_DATABASE_URL=postgresql+psycopg://...``."""

from __future__ import annotations

import contextlib
import functools
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors, private_files, settings
from velyrix.controlplane.db import pooling


def database_url(url: str | None = None) -> str:
    """``url`` if given, else the configured one (``velyrix.settings``)."""
    return url or settings.load().database_url()


def make_engine(url: str | None = None, **kwargs: Any) -> sa.Engine:
    """A new engine for ``url`` (the configured database when None).

    SQLite: creates the parent directory, turns on WAL mode, foreign keys and a 5 s busy timeout on
    every connection, and allows use from the API's worker threads. The pool is sized by
    ``pooling.config`` unless ``kwargs`` choose a pool.
    """
    url = database_url(url)
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            database = Path(parsed.database)
            home = settings.load().paths.home
            private_files.private_dir(database.parent, tighten=database.parent.resolve() == home.resolve())
            private_files.private_sqlite(database)
        kwargs.setdefault("connect_args", {"check_same_thread": False, "timeout": 5})
        if parsed.database and parsed.database != ":memory:" and "poolclass" not in kwargs:
            kwargs = {**pooling.config("sqlite").engine_options(), **kwargs}
        engine = sa.create_engine(url, **kwargs)

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=5000")
            cur.close()

        return engine
    if parsed.get_backend_name() != "postgresql":
        raise errors.InvalidInputError(
            f"unsupported database URL scheme '{parsed.drivername}'",
            hint="use sqlite:///PATH or postgresql+psycopg://USER@HOST:PORT/DB",
        )
    kwargs.setdefault("pool_pre_ping", True)
    if "poolclass" not in kwargs:
        kwargs = {**pooling.config("postgresql").engine_options(), **kwargs}
    return sa.create_engine(url, **kwargs)


MIN_FREE_BYTES = 1024 * 1024
"""Below this much free space beside a SQLite database, writes may fail: not ready."""


def disk_full(engine: sa.Engine) -> bool:
    """Whether the SQLite database's directory has less than ``MIN_FREE_BYTES`` free (False otherwise)."""
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:":
        return False
    return shutil.disk_usage(Path(database).parent).free < MIN_FREE_BYTES


@functools.cache
def _default_factory(url: str) -> orm.sessionmaker[orm.Session]:
    return orm.sessionmaker(make_engine(url), expire_on_commit=False)


@contextlib.contextmanager
def session(url: str | None = None) -> Iterator[orm.Session]:
    """A session on the configured database, committed on success and rolled back on error.

    For scripts and reconcilers: ``with db.session() as s: s.add(...)``. The API uses its own engine.
    """
    factory = _default_factory(database_url(url))
    with factory() as s:
        try:
            yield s
            s.commit()
        except BaseException:
            s.rollback()
            raise
