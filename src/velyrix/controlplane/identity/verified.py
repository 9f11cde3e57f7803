"""Verified principals, cached per process and checked on every request by one number.

A key's or session's row, as authentication read it (``auth/principals.py``, ``identity/sessions.py``),
is kept under the SHA-256 it was looked up by, with the credential generation read just before it
(``db/models/credentials.py``). The database's own triggers move the generation on, in the same
transaction, at every revocation, rotation, deactivation, role change, policy change and logout, on
whichever replica it happens; not when a session's last use moves on (migration ``0025``: a cached row's
older ``last_seen_at`` only brings its idle timeout sooner, and a due touch re-reads the row). A
request reads the generation first (one row, no SQLAlchemy on the way); while it is unchanged the cached
row stands in for the lookup, otherwise the whole cache is dropped. So a revoked credential answers 401
on the very next request, as without the cache.

A cached row only ever serves a clean success: when the checks of authentication on a cached row
refuse it or call for a write (expiry, idle timeout, ``last_seen_at`` due), the row is read again and
the checks run on the fresh row (another replica may have moved ``last_seen_at`` on).

Used where the API reads on the event loop: SQLite, in-process (``api/inline.py``), and PostgreSQL,
awaited (``api/inline_pg.py``: the generation is one prepared statement of one row, cheaper than the
joined lookup, and a cached row then costs that one round trip; for a lazy route none of its own, the
generation read in the route's first statement, ``Cache.peek`` and ``api/authn.py``'s ``ahead``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from velyrix.controlplane.db.models import credentials

log = logging.getLogger("velyrix.identity")
MAX_ENTRIES = 10_000
"""Rows kept at most; the cache is dropped whole when full (each credential is then looked up once more)."""
GENERATION_SQL = "SELECT generation FROM credential_generation WHERE id = 1"
"""The credential generation (one row); ``api/inline_pg.py`` also reads it inside a route's statement."""

First = Callable[[Any, dict[str, Any]], Any]
"""``first(statement, params)``: the first row of ``statement`` (a lookup by ``:digest``), or None."""


class Cache:
    """Rows of verified credentials under (statement, digest), valid for one credential generation."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._generation: int | None = None
        self._rows: dict[tuple[int, str], Any] = {}
        self._derived: dict[tuple[int, str], Any] = {}
        """What a caller built from a cached row (an API key's ``Principal``: ``identity/resolve.py``),
        immutable, kept and dropped with the row."""

    def source(self, conn: sa.Connection) -> Source:
        """A row source for one authentication on ``conn``: reads the generation now (before any lookup,
        so that a change committed after it is seen by the next request), dropping stale rows."""
        raw = conn.connection.dbapi_connection
        assert raw is not None
        generation = int(raw.execute(GENERATION_SQL).fetchone()[0])
        if generation != self._generation:
            self._rows, self._derived = {}, {}
            self._generation = generation
        return Source(self, conn)

    def peek(self, statement: Any, digest: str) -> tuple[int, Any, Any] | None:
        """(the generation the cache holds rows for, the cached row of ``digest``, what ``Source.keep``
        stored with it) when both are there; reads nothing. The row is valid only as long as the
        database's generation is still that one: a caller reads it before relying on the row
        (``api/authn.py``'s ``ahead``, confirmed by ``api/inline_pg.Reader.run``)."""
        key = (id(statement), digest)
        row, derived, generation = self._rows.get(key), self._derived.get(key), self._generation
        if row is None or derived is None or generation is None:
            return None
        return generation, row, derived

    def _get(self, key: tuple[int, str]) -> Any:
        return self._rows.get(key)

    def _put(self, key: tuple[int, str], row: Any) -> None:
        rows = self._rows
        if len(rows) >= self.max_entries:
            rows = self._rows = {}
            self._derived = {}
        rows[key] = row
        self._derived.pop(key, None)

    def drop(self, key: tuple[int, str]) -> None:
        self._rows.pop(key, None)
        self._derived.pop(key, None)


class Source:
    """``first`` for one authentication: the cached row when there is one (``hit`` is then set), else
    the row read on the connection (and cached); ``fresh`` always reads. ``source`` and every use of its
    rows run in one synchronous call (on PostgreSQL, each round of ``api/inline_pg.Reader.run`` runs the
    whole check again), so no other request's generation comes between them."""

    def __init__(self, cache: Cache, conn: sa.Connection) -> None:
        self._cache, self._conn = cache, conn
        self.hit: tuple[int, str] | None = None

    def first(self, statement: Any, params: dict[str, Any]) -> Any:
        key = (id(statement), str(params["digest"]))
        row = self._cache._get(key)
        if row is not None:
            self.hit = key
            return row
        return self.fresh(statement, params)

    def known(self, statement: Any, digest: str) -> tuple[Any, Any] | None:
        """(the cached row of ``digest``, what ``keep`` stored with it), when both are there; reads nothing."""
        key = (id(statement), digest)
        derived = self._cache._derived.get(key)
        row = self._cache._rows.get(key)
        if derived is None or row is None:
            return None
        return row, derived

    def keep(self, statement: Any, digest: str, derived: Any) -> None:
        """Store ``derived`` (immutable, built from the cached row of ``digest`` by a clean success) with
        that row, for as long as the row stays cached; nothing when the row is not cached."""
        key = (id(statement), digest)
        if key in self._cache._rows:
            self._cache._derived[key] = derived

    def fresh(self, statement: Any, params: dict[str, Any]) -> Any:
        row = self._conn.execute(statement, params).first()
        if row is not None:
            self._cache._put((id(statement), str(params["digest"])), row)
        return row


def for_engine(engine: sa.Engine) -> Cache | None:
    """A ``Cache`` when ``engine``'s database has the generation and every trigger that moves it
    (``credentials.WATCHED_TABLES``), else ``None`` (and a warning: a migration that rebuilt one of
    those tables without its trigger would otherwise leave revoked credentials cached)."""
    names = {
        "sqlite": "SELECT name FROM sqlite_master WHERE type = 'trigger'",
        "postgresql": "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal",
    }
    query = names.get(engine.dialect.name)
    if query is None:
        return None
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table(credentials.CredentialGeneration.__tablename__):
            return None
        triggers = [str(name) for (name,) in conn.execute(sa.text(query))]
    missing = [
        t for t in credentials.WATCHED_TABLES if not any(n.startswith(f"{t}_credential_generation") for n in triggers)
    ]
    if missing:
        log.warning("credential generation triggers missing on %s: principals are not cached", ", ".join(missing))
        return None
    return Cache()
