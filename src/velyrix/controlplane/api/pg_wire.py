"""PostgreSQL's wire, for ``api/inline_pg.py``: one statement on a psycopg asynchronous connection
through libpq's asynchronous calls directly (prepared on the server on first use, then one
``send_query_prepared`` and its result, awaited as the socket becomes ready), which costs about a third
of the client CPU of psycopg's async cursor per statement (docs/benchmarks.md, branch ``pgpath``)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

import psycopg
import psycopg.abc
from psycopg import pq
from psycopg.adapt import PyFormat, Transformer

Conn = psycopg.AsyncConnection[Any]
Key = tuple[str, Sequence[Any]]

_PREPARED: dict[int, dict[str, bytes]] = {}
"""Per connection (by id, removed when it is dropped): the statements prepared on it, SQL to name."""
_LOADERS: dict[int, psycopg.abc.Transformer] = {}
"""Per connection: psycopg's converter of its values (the connection's own adapters)."""
_PARAMETER = re.compile(r"%%|%s")


async def rows(conn: Conn, key: Key) -> list[Any]:
    """The rows of ``key`` (SQL with ``%s`` parameters as ``db/prepared.py`` compiles it, arguments)
    on ``conn``, through libpq's asynchronous calls directly: the statement prepared on first use, then
    one ``send_query_prepared`` and its result (psycopg's cursor costs about 3x the CPU per statement)."""
    pgconn = conn.pgconn
    names = _PREPARED.setdefault(id(conn), {})
    name = names.get(key[0])
    if name is None:
        name = f"velyrix_{len(names)}".encode()
        pgconn.send_prepare(name, _numbered(key[0]))
        await _result(conn)
        names[key[0]] = name
    loader = _LOADERS.get(id(conn))
    if loader is None:
        loader = _LOADERS[id(conn)] = Transformer(conn)
    params = loader.dump_sequence(key[1], [PyFormat.TEXT] * len(key[1]))
    pgconn.send_query_prepared(name, params, param_formats=loader.formats)
    result = await _result(conn)
    loader.set_pgresult(result)
    return loader.load_rows(0, result.ntuples, tuple)


async def _result(conn: Conn) -> pq.abc.PGresult:
    """The one result of the statement sent on ``conn``, read as the socket becomes readable; a
    ``psycopg.Error`` for a failed statement or connection."""
    pgconn, loop = conn.pgconn, asyncio.get_running_loop()
    while pgconn.flush():
        await _ready(loop, pgconn.socket, writable=True)
    found: pq.abc.PGresult | None = None
    while True:
        await _ready(loop, pgconn.socket, writable=False)  # the answer cannot be there before the server read
        pgconn.consume_input()
        while not pgconn.is_busy():
            result = pgconn.get_result()
            if result is None:
                if found is None:
                    raise psycopg.OperationalError("no result")
                return found
            if result.status not in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK):
                raise psycopg.DatabaseError((result.error_message or b"").decode(errors="replace"))
            found = result


async def _ready(loop: asyncio.AbstractEventLoop, fd: int, *, writable: bool) -> None:
    waiter: asyncio.Future[None] = loop.create_future()
    if writable:
        loop.add_writer(fd, _wake, waiter)
    else:
        loop.add_reader(fd, _wake, waiter)
    try:
        await waiter
    finally:
        if writable:
            loop.remove_writer(fd)
        else:
            loop.remove_reader(fd)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _numbered(sql: str) -> bytes:
    """``sql`` with its ``%s`` parameters as ``$1``, ``$2`` ... and ``%%`` as ``%`` (libpq's form)."""
    counter = iter(range(1, 1 << 16))
    return _PARAMETER.sub(lambda m: "%" if m.group() == "%%" else f"${next(counter)}", sql).encode()


def forget(conn: Conn) -> None:
    """Drop what is kept for ``conn`` (closed or being closed)."""
    _PREPARED.pop(id(conn), None)
    _LOADERS.pop(id(conn), None)
