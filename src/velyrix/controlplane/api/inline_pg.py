"""Reads on the event loop, for PostgreSQL: the key or session lookup, the credential generation
(``identity/verified.py``) and a route's one-row read or short list (``Ctx.read``) run on psycopg's
asynchronous connections, awaited on the loop, instead of a hop to a worker thread, a checkout from the
API's pool and SQLAlchemy's execute per statement (bench/bench_api_load.py).

``Reader`` holds ``CONNECTIONS`` connections of its own, outside the API's pool: opened at start-up
(the app's lifespan, on the loop that serves the requests), in autocommit, read-only
(``default_transaction_read_only``), each statement prepared on the server (``prepare=True``). Every
wait is bounded, and what does not finish in time goes to the worker-thread path (``Unavailable``), so
the loop never stalls on the database:

- no connection free within ``ACQUIRE_WAIT_S``: the request reads in a worker thread;
- a read over ``READ_TIMEOUT_S`` (a lock held by a migration, a server under load): the read is
  cancelled on the server, its connection closed and a new one opened; the request reads in a thread;
- a broken connection (the server restarted, the backend terminated): closed, reopened in the
  background (retried with a growing delay while the server is away); the request reads in a thread.

The sync code of a read (``scoping.Scope``, ``identity.resolve``) runs unchanged through ``Replay``: a
DB-API stand-in for ``db/prepared.py`` that answers the statements fetched before and raises ``Needs``
for the next one, which ``Reader.run`` then fetches (awaited) before running the code again. A read of
one row is one round trip; a cached principal (``verified``) one more for the generation, or none for a
route that lets its first read carry the generation (``run``'s ``generation``, ``folded``: a key GET of a
cluster is then one round trip in all). Writes never run here."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import psycopg
import sqlalchemy as sa

from velyrix.controlplane.api import pg_wire
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import prepared
from velyrix.controlplane.identity import sessions, verified

log = logging.getLogger("velyrix.api")
T = TypeVar("T")
Conn = psycopg.AsyncConnection[Any]
Key = tuple[str, tuple[Any, ...]]

CONNECTIONS = 8
"""Connections of a ``Reader`` (each serves one read at a time; reads take well under a millisecond)."""
ACQUIRE_WAIT_S = 0.02
"""Seconds a read waits for a free connection before it goes to a worker thread (awaited: the loop
serves other requests meanwhile, and a thread costs more than the wait)."""
READ_TIMEOUT_S = 1.0
"""Seconds one statement may take before it is cancelled and the read goes to a worker thread."""
STATEMENT_TIMEOUT_MS = 2000
"""The server's own limit on a statement of these connections (a cancel that did not arrive)."""
CONNECT_TIMEOUT_S = 5
RECONNECT_MAX_S = 30.0
"""The longest delay between two attempts to reopen a connection while the server is away."""
MAX_ROUNDS = 8
"""Statements one read may fetch (one per round); more goes to a worker thread."""
APPLICATION_NAME = "velyrix-inline"
"""``application_name`` of the connections (``pg_stat_activity``)."""

LOOKUPS = (principals._BY_DIGEST, sessions._BY_SECRET)
"""The statements of authentication run here (a key's row, a session's row): every other statement
``identity.resolve`` may run (a node token, a provider staff member's tenant) goes to a worker thread."""


class Unavailable(Exception):
    """No read on the loop now (no connection free in time, broken, timed out, or a statement this
    module does not run): the caller reads in a worker thread."""


class Moved(Unavailable):
    """The credential generation moved on since the caller's principal was cached: what was read is
    discarded, and the caller checks the credential again (``api/authn.py``)."""

    def __init__(self, expected: int, found: int) -> None:
        super().__init__(f"credential generation {found}, not {expected}")


class Needs(Exception):
    """A statement ``Replay`` has no rows for yet: ``key`` = (SQL, arguments)."""

    def __init__(self, key: Key) -> None:
        super().__init__(key[0])
        self.key = key


class _Rows:
    def __init__(self, rows: list[Any]) -> None:
        self._rows = rows

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return self._rows


class Replay:
    """A DB-API connection for ``prepared.Prepared``: ``execute(sql, args)`` answers the rows fetched
    for that SQL and those arguments, and raises ``Needs`` for any other."""

    def __init__(self) -> None:
        self.fetched: dict[Key, list[Any]] = {}

    def execute(self, sql: str, args: Sequence[Any] = ()) -> _Rows:
        key = (sql, tuple(args))
        rows = self.fetched.get(key)
        if rows is None:
            raise Needs(key)
        return _Rows(rows)


class _First:
    def __init__(self, row: Any) -> None:
        self._row = row

    def first(self) -> Any:
        return self._row


class Statements:
    """What authentication uses of a connection (``identity/resolve.py``, ``identity/verified.py``),
    over a ``Replay``: ``execute(statement, params).first()`` for the ``LOOKUPS``, and the DB-API
    connection (``connection.dbapi_connection``) on which the generation is read."""

    def __init__(self, replay: Replay, dialect: sa.Dialect) -> None:
        self.dbapi_connection = replay
        self.connection = self
        self._dialect = dialect

    def execute(self, statement: Any, params: dict[str, Any] | None = None) -> _First:
        if not any(statement is known for known in LOOKUPS):
            raise Unavailable(f"not run on the loop: {statement}")
        fast = prepared.prepare(statement, self._dialect)
        if fast is None:
            raise Unavailable("a statement that does not compile for psycopg")
        return _First(fast.first(self.dbapi_connection, params or {}))


def no_session() -> Any:
    """A ``scoping.Scope`` factory: a read that needs a session (an ORM query) is done in a thread."""
    raise Unavailable("a read through a session")


class Reader:
    """``CONNECTIONS`` asynchronous connections to the database of ``url``, for ``run``."""

    def __init__(self, url: sa.URL, dialect: sa.Dialect, size: int = CONNECTIONS) -> None:
        self.dialect = dialect
        """The engine's dialect: statements are compiled for it (``db/prepared.py``)."""
        self._conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._size = size
        self._loop: asyncio.AbstractEventLoop | None = None
        self._idle: list[Conn] = []
        self._waiters: collections.deque[asyncio.Future[Conn | None]] = collections.deque()
        self._open = 0
        """Connections open or being opened."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._opening: set[asyncio.Task[None]] = set()
        self._closed = True
        self.counts: collections.Counter[str] = collections.Counter()
        """Reads by outcome: ``inline``; to a thread: ``busy``, ``timeout``, ``broken``, ``other_loop``; and
        of the generation a read confirmed: ``folded`` (in its statement), ``confirmed`` (on its own),
        ``moved`` (the read discarded)."""

    async def start(self) -> None:
        """Open the connections on the running loop (the one that will serve the reads); a connection
        that cannot be opened now is retried in the background. A start while started (the same app
        served by a second server, in another thread, as tests do) changes nothing: the connections stay
        with the first loop, and the second one's reads go to worker threads."""
        if not self._closed:
            return
        self._loop = asyncio.get_running_loop()
        self._closed = False
        await asyncio.gather(*(self._open_one(0.0) for _ in range(self._size)))

    async def close(self) -> None:
        """Close every connection (those in use as they come back); ``run`` answers ``Unavailable``.
        Logs how the reads went (``counts``). Only on the loop the reader serves (see ``start``)."""
        if self._loop is not None and asyncio.get_running_loop() is not self._loop:
            return
        if not self._closed:
            log.info("PostgreSQL reads on the event loop: %s", dict(sorted(self.counts.items())))
        self._closed = True
        for task in list(self._opening):
            task.cancel()
        idle, self._idle = self._idle, []
        self._open -= len(idle)
        for conn in idle:
            await _discard(conn, cancel=False)
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def run(self, fn: Callable[[Replay], T], generation: int | None = None) -> T:
        """``fn(replay)`` once every statement it runs has been fetched on one connection (at most
        ``MAX_ROUNDS``); ``Unavailable`` when that cannot be done on the loop now. Exceptions of ``fn``
        (a 404, a 401) are its answer and pass through.

        ``generation``: the credential generation the caller's principal was cached for
        (``api/authn.py``'s ``Pending``). The generation is then read in the same statement as ``fn``'s
        first (``folded``: one round trip), or alone when ``fn`` ran none or that statement found no row;
        ``Moved`` (nothing of ``fn`` answered) when it is no longer ``generation``."""
        if self._closed or asyncio.get_running_loop() is not self._loop:
            self.counts["other_loop"] += 1
            raise Unavailable("not the loop of the connections")
        conn = await self._acquire()
        if conn is None:
            self.counts["busy"] += 1
            raise Unavailable("no connection free in time")
        replay = Replay()
        try:
            for _ in range(MAX_ROUNDS):
                try:
                    result = fn(replay)
                except Needs as needed:
                    if generation is None:
                        replay.fetched[needed.key] = await self._query(conn, needed.key)
                    else:
                        replay.fetched[needed.key] = await self._folded(conn, needed.key, generation)
                        generation = None
                    continue
                except Unavailable:
                    raise
                except Exception:
                    if generation is not None:  # an answer of fn (a 422) only for a principal still valid
                        await self._confirm(conn, generation)
                    raise
                if generation is not None:
                    await self._confirm(conn, generation)
                self.counts["inline"] += 1
                return result
            raise Unavailable("too many statements for one read")
        except _Lost as lost:
            conn = None
            raise Unavailable(str(lost)) from None
        finally:
            if conn is not None:
                self._release(conn)

    async def _folded(self, conn: Conn, key: Key, generation: int) -> list[Any]:
        """The rows of ``key`` read with the credential generation in one statement; ``Moved`` when the
        generation is not ``generation``."""
        sql = folded(key[0])
        if sql is None:
            await self._confirm(conn, generation)
            return await self._query(conn, key)
        rows = await self._query(conn, (sql, key[1]))
        if not rows:  # no row to carry the generation: read on its own
            await self._confirm(conn, generation)
            return rows
        if rows[0][0] != generation:
            self.counts["moved"] += 1
            raise Moved(generation, rows[0][0])
        self.counts["folded"] += 1
        return [row[1:] for row in rows]

    async def _confirm(self, conn: Conn, generation: int) -> None:
        """``Moved`` unless the credential generation is still ``generation`` (a round trip of its own)."""
        found = (await self._query(conn, (verified.GENERATION_SQL, ())))[0][0]
        if found != generation:
            self.counts["moved"] += 1
            raise Moved(generation, found)
        self.counts["confirmed"] += 1

    async def _query(self, conn: Conn, key: Key) -> list[Any]:
        """The rows of ``key`` on ``conn``; ``_Lost`` (the connection closed) when it timed out, broke
        or was interrupted."""
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                return await pg_wire.rows(conn, key)
        except TimeoutError:
            self.counts["timeout"] += 1
            self._drop(conn, cancel=True)
            raise _Lost(f"a read over {READ_TIMEOUT_S} s") from None
        except psycopg.Error as exc:
            self.counts["broken"] += 1
            self._drop(conn, cancel=False)
            raise _Lost(f"the connection failed: {type(exc).__name__}") from None
        except BaseException:  # cancelled (the client went away): the connection's state is unknown
            self._drop(conn, cancel=True)
            raise

    async def _acquire(self) -> Conn | None:
        if self._idle:
            return self._idle.pop()
        if self._open == 0 or self._loop is None:
            return None
        waiter: asyncio.Future[Conn | None] = self._loop.create_future()
        self._waiters.append(waiter)
        timer = self._loop.call_later(ACQUIRE_WAIT_S, _expire, waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
                self._release(waiter.result())  # type: ignore[arg-type]
            raise
        finally:
            timer.cancel()

    def _release(self, conn: Conn) -> None:
        if self._closed or conn.closed or conn.broken:
            self._drop(conn, cancel=False)
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    def _drop(self, conn: Conn, *, cancel: bool) -> None:
        """Close ``conn`` in the background (its statement cancelled on the server first, if asked) and
        open another in its place."""
        self._open -= 1
        self._spawn(_discard(conn, cancel), self._tasks)
        if not self._closed:
            self._spawn(self._open_one(0.0), self._opening)

    @staticmethod
    def _spawn(work: Any, tasks: set[asyncio.Task[None]]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _open_one(self, delay_s: float) -> None:
        self._open += 1
        try:
            if delay_s:
                await asyncio.sleep(delay_s)
            conn = await psycopg.AsyncConnection.connect(
                self._conninfo,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT_S,
                application_name=APPLICATION_NAME,
                options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS} -c default_transaction_read_only=on",
            )
        except (psycopg.Error, OSError) as exc:
            self._open -= 1
            retry_s = min(max(2 * delay_s, 0.5), RECONNECT_MAX_S)
            log.warning("inline PostgreSQL connection failed (%s); retrying in %.1f s", exc, retry_s)
            if not self._closed:
                self._spawn(self._open_one(retry_s), self._opening)
            return
        except BaseException:
            self._open -= 1
            raise
        self._release(conn)


class _Lost(Exception):
    """The connection of a read was dropped (timed out or broken)."""


_FOLD = "SELECT (" + verified.GENERATION_SQL + ") AS velyrix_generation, "


def folded(sql: str) -> str | None:
    """``sql`` (a ``SELECT`` as ``db/prepared.py`` compiles it) with the credential generation as its
    first column, from the same snapshot as its rows (an uncorrelated subquery: evaluated once), or None
    for a statement of another form."""
    if not sql.startswith("SELECT ") or sql.startswith("SELECT DISTINCT"):
        return None
    return _FOLD + sql[len("SELECT ") :]


def _expire(waiter: asyncio.Future[Conn | None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def _discard(conn: Conn, cancel: bool) -> None:
    pg_wire.forget(conn)
    with contextlib.suppress(psycopg.Error, OSError, TimeoutError):
        if cancel and not conn.closed and not conn.broken:
            await conn.cancel_safe(timeout=CONNECT_TIMEOUT_S)
    with contextlib.suppress(psycopg.Error, OSError):
        await conn.close()


def reader_for(engine: sa.Engine) -> Reader | None:
    """A ``Reader`` for a PostgreSQL database served through psycopg, ``None`` otherwise."""
    if engine.dialect.name != "postgresql" or engine.dialect.driver != "psycopg":
        return None
    return Reader(engine.url, engine.dialect)
