"""A request's credentials to its principal, for ``require`` (``api/context.py``): the bearer key or the
session cookie looked up on the event loop where the backend allows it (``api/inline.py`` for SQLite,
``api/inline_pg.py`` for PostgreSQL), else in a worker thread on a pooled connection, which first takes a
database slot (``api/pool.py``: 503 after a bounded wait).

The slot is taken only when a pooled connection is about to be used: by every route at once unless the
route declared ``require(..., lazy=True)``; for a lazy route only when its authentication, its key's
last-use write or one of its reads falls back to a worker thread. A read served on the loop uses no pooled
connection, so it takes no slot (at 256 connections the GETs no longer queue for slots they do not use).

``ahead`` serves a lazy route on PostgreSQL without a round trip of its own: an API key whose principal is
cached (``identity/verified.py``) for credential generation ``g`` is handed to the route as ``Pending``,
and the route's first read (``Ctx.read``) reads the generation in the same statement as its rows
(``inline_pg.Reader.run``): unchanged, the rows are the answer; moved on, they are discarded and the key
is checked again as on any request (``authorized``), so a revocation, a logout, a SCIM deactivation, a
role change or an expiry still ends access on the very next request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from fastapi import Request
from fastapi.security.utils import get_authorization_scheme_param
from starlette.concurrency import run_in_threadpool

from velyrix.controlplane.api import inline, inline_pg, pool
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.identity import keyuse, resolve, sessions

Session = tuple[str | None, str, str | None]
"""(session cookie, method, CSRF header), as ``session_of`` reads them."""


def bearer_token(authorization: str | None) -> str | None:
    """The credentials of an ``Authorization: Bearer ...`` header, None for any other or none (as
    FastAPI's ``HTTPBearer(auto_error=False)`` reads it; read here, not as a nested dependency, which
    FastAPI solves at a cost on every request: bench/bench_identity.py)."""
    scheme, credentials = get_authorization_scheme_param(authorization)
    if not (authorization and scheme and credentials) or scheme.lower() != "bearer":
        return None
    return credentials


def session_of(request: Request, token: str | None = None) -> Session:
    """(session cookie, method, CSRF header) for ``identity.resolve``; with a bearer ``token`` (which
    wins over any cookie there) the cookies are not parsed."""
    if token is not None:
        return None, request.method, None
    return request.cookies.get(sessions.COOKIE), request.method, request.headers.get(sessions.CSRF_HEADER)


async def take_slot(request: Request) -> None:
    """A database slot for this request (``pool.Gate``), given back by ``RequestIdMiddleware``; nothing
    when the request holds one already."""
    if "db_slot" not in request.scope["state"]:
        gate: pool.Gate = request.app.state.db_gate
        request.scope["state"]["db_slot"] = await gate.acquire(getattr(request.state, "request_id", "-"))


def holds_slot(request: Request) -> bool:
    """Whether the request holds a database slot (``take_slot``)."""
    return "db_slot" in request.scope["state"]


async def touch(request: Request, conn: sa.Connection | None, key_id: str) -> None:
    """Record the key's last use (``identity.keyuse``) on the request's connection, or on a new one (a
    slot taken first). In a worker thread: a write may wait for SQLite's write lock."""
    address = request.client.host if request.client else None
    await take_slot(request)
    if conn is not None:
        await run_in_threadpool(keyuse.touch, conn, key_id, address)
        return

    def on_own_connection() -> None:
        with request.app.state.engine.connect() as own:
            keyuse.touch(own, key_id, address)

    await run_in_threadpool(on_own_connection)


def _authenticate(engine: sa.Engine, token: str | None, session: Session) -> principals.Principal:
    cookie, method, csrf = session
    with engine.connect() as conn:  # a bare connection: cheaper than a session, on every request
        return resolve.authenticate(conn, token, cookie, method, csrf)


def _connect_and_authenticate(
    engine: sa.Engine, token: str | None, session: Session
) -> tuple[sa.Connection, principals.Principal]:
    """A connection (kept for the request's reads) and the principal it authenticates."""
    conn = engine.connect()
    try:
        return conn, resolve.authenticate(conn, token, *session)
    except BaseException:
        conn.close()
        raise


def _check_sqlite(request: Request, reader: inline.Reader, token: str | None) -> sessions.Checked | None:
    """``resolve.check`` on SQLite's inline connection; None when it is in use or busy."""
    with reader.connection() as conn:
        if conn is None:
            return None
        try:
            return resolve.check(conn, token, *session_of(request, token), cache=request.app.state.principal_cache)
        except inline.Busy:
            return None


async def _check_pg(request: Request, reader: inline_pg.Reader, token: str | None) -> sessions.Checked | None:
    """``resolve.check`` awaited on PostgreSQL's inline connections; None when they cannot serve it now."""
    session, cache, dialect = session_of(request, token), request.app.state.principal_cache, reader.dialect

    def check(replay: inline_pg.Replay) -> sessions.Checked:
        conn: Any = inline_pg.Statements(replay, dialect)
        return resolve.check(conn, token, *session, cache=cache)

    try:
        return await reader.run(check)
    except inline_pg.Unavailable:
        return None


async def _authenticate_inline(request: Request, token: str | None) -> principals.Principal | None:
    """The principal, read on the event loop; a write the lookup calls for (a session's ``last_seen_at``,
    once a minute, or its end) runs in a worker thread on a pooled connection. ``None`` when the inline
    connection cannot serve it now (then the caller reads in a thread)."""
    state = request.app.state
    if state.inline_reader is not None:
        checked = _check_sqlite(request, state.inline_reader, token)
    else:
        checked = await _check_pg(request, state.inline_pg, token)
    if checked is None:
        return None
    if checked.write is not None:
        await take_slot(request)

        def write() -> None:
            with request.app.state.engine.connect() as own:
                sessions.apply(own, checked)

        await run_in_threadpool(write)
    return sessions.outcome(checked)


async def principal_of(
    request: Request, token: str | None, *, lazy: bool = False
) -> tuple[sa.Connection | None, principals.Principal]:
    """(the connection kept for the request's reads, or None; the authenticated principal). A slot is
    taken unless ``lazy`` and the principal was read on the loop."""
    state = request.app.state
    if state.inline_reader is not None or state.inline_pg is not None:
        found = await _authenticate_inline(request, token)
        if found is not None:
            if not lazy:
                await take_slot(request)
            return None, found
    await take_slot(request)
    if state.db_shared:
        # SQLite: one pooled connection serves the key lookup and the reads of the request (closed
        # by RequestIdMiddleware); cheaper than a connection per query.
        conn, principal = await run_in_threadpool(_connect_and_authenticate, state.engine, token, session_of(request))
        request.state.conn = conn
        return conn, principal
    return None, await run_in_threadpool(_authenticate, state.engine, token, session_of(request))


def _is_key(principal: principals.Principal) -> bool:
    return principal.user_id is None and principal.role != principals.NODE_ROLE


async def authorized(
    request: Request, token: str | None, scope_name: str, *, lazy: bool = False
) -> tuple[sa.Connection | None, principals.Principal]:
    """``principal_of``, the key's last use recorded when due, then ``scope_name`` demanded (401 / 403)."""
    conn, principal = await principal_of(request, token, lazy=lazy)
    request.state.principal = principal
    if _is_key(principal) and keyuse.due(principal.key_id):
        await touch(request, conn, principal.key_id)
    principal.require(scope_name)
    return conn, principal


@dataclass(frozen=True)
class Pending:
    """A key's cached principal handed to a lazy route before its generation is read: valid while the
    credential generation is still ``generation`` (``inline_pg.Reader.run`` reads it with the route's
    first statement)."""

    principal: principals.Principal
    generation: int


def ahead(request: Request, token: str | None, scope_name: str) -> Pending | None:
    """``Pending`` for a lazy route on PostgreSQL when ``token`` is an API key whose principal is cached,
    usable now (not revoked, not expired by the clock), has ``scope_name`` and has no last-use write due;
    None otherwise (the request is then authenticated as any other, ``authorized``). Reads nothing."""
    state = request.app.state
    cache = state.principal_cache
    if state.inline_pg is None or cache is None:
        return None
    digest = resolve.key_digest(token)
    if digest is None:
        return None
    found = cache.peek(principals.BY_DIGEST, digest)
    if found is None:
        return None
    generation, row, principal = found
    if not principals.usable(row, models.utcnow()) or scope_name not in principal.scopes:
        return None
    if not isinstance(principal, principals.Principal) or not _is_key(principal) or keyuse.is_due(principal.key_id):
        return None
    return Pending(principal, generation)
