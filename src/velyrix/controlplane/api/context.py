"""Per-request plumbing: request ids and access logs (ASGI middleware), the database session, and
``require(scope)``, the dependency every ``/v1`` route declares: it takes a database slot
(``api/pool.py``: 503 after a bounded wait), authenticates the bearer key, checks the scope and hands the
route a ``Ctx`` (the tenant-scoped query layer plus audit). No connection is ever waited for on the event
loop: queries and checkouts run in worker threads, but for the short reads of ``api/inline.py`` (SQLite,
in-process) and ``api/inline_pg.py`` (PostgreSQL, awaited, every wait bounded)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa
from fastapi import Request, Response
from fastapi.security.utils import get_authorization_scheme_param
from pydantic import BaseModel
from sqlalchemy import orm
from starlette.concurrency import run_in_threadpool

from velyrix import errors
from velyrix.controlplane import audit, scoping
from velyrix.controlplane.api import inline, inline_pg, pool
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.identity import keyuse, resolve, sessions

T = TypeVar("T")
BEARER_SCHEME = {
    "HTTPBearer": {"type": "http", "scheme": "bearer", "description": "API key: `Authorization: Bearer vlx_...`"}
}
"""The OpenAPI security scheme of every route that declares ``require`` (``app.py`` adds it to the document)."""


class RequestIdMiddleware:
    """Gives every request an id (``X-Request-ID`` response header, ``request.state.request_id``), closes
    its database resources and gives back its database slot once answered, and queues its access-log line
    (``access_log.AccessLog``). Pure ASGI: cheaper than ``BaseHTTPMiddleware``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = "req_" + secrets.token_hex(10)
        scope.setdefault("state", {})["request_id"] = request_id
        header = (b"x-request-id", request_id.encode())
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), header]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            state = scope["state"]
            try:
                await _close_resources(scope["app"].state, state)
            finally:
                slot = state.pop("db_slot", None)
                if slot is not None:
                    pool.Gate.release(slot)
            principal = state.get("principal")
            scope["app"].state.access_log.record(
                (
                    scope["method"],
                    scope["path"],
                    status,
                    (time.perf_counter() - started) * 1000,
                    request_id,
                    principal.key_id if principal else "-",
                )
            )


async def _close_resources(app_state: Any, state: dict[str, Any]) -> None:
    """Close the request's session and connection (back to the pool). Closing rolls back: in-process on
    SQLite (releasing a lock never waits), a round trip on PostgreSQL (so off the loop)."""
    for key in ("db", "conn"):
        resource = state.pop(key, None)
        if resource is not None:
            if app_state.db_shared:
                resource.close()
            else:
                await run_in_threadpool(resource.close)


def request_info(request: Request) -> audit.RequestInfo:
    client = request.client
    return audit.RequestInfo(
        request_id=getattr(request.state, "request_id", "req_none"),
        source_address=client.host if client else None,
        method=request.method,
        path=request.url.path,
    )


@dataclass
class Ctx:
    """What a route gets: the principal's scoped view of the database, and the audit/commit helpers."""

    request: Request
    scope: scoping.Scope

    @property
    def principal(self) -> principals.Principal:
        return self.scope.principal

    def audit(
        self,
        target: str,
        *,
        status_code: int = 200,
        outcome: str = "success",
        detail: dict[str, Any] | None = None,
        tenant_id: str | None = None,
        action: str | None = None,
    ) -> models.AuditEvent:
        """Record this mutation in the current transaction (action: the route's name unless given)."""
        route = self.request.scope.get("route")
        return audit.record(
            self.scope.session,
            request_info(self.request),
            self.principal,
            action=action or str(getattr(route, "name", "unknown")),
            target=target,
            outcome=outcome,
            status_code=status_code,
            detail=detail,
            tenant_id=tenant_id,
        )

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` (a database call) from an async route; see ``run_db``."""
        return await run_db(self.request, fn, *args)

    async def read(self, fn: Callable[[scoping.Scope], T]) -> T:
        """``fn(scope)``, a read of a few rows: on the event loop (SQLite in-process, ``api/inline.py``;
        PostgreSQL awaited on psycopg's asynchronous connections, ``api/inline_pg.py``), else (the inline
        connection in use, busy, broken or slow, a read it does not cover) ``fn(self.scope)`` in a worker
        thread. ``fn`` only reads through the scope it is given (it may run more than once)."""
        state = self.request.app.state
        if not self.scope.session_open:
            reader: inline.Reader | None = state.inline_reader
            if reader is not None:
                with reader.connection() as conn:
                    if conn is not None:
                        try:
                            return fn(scoping.Scope(None, self.principal, connection=conn, dbapi=reader.dbapi))
                        except inline.Busy:
                            pass
            pg: inline_pg.Reader | None = state.inline_pg
            if pg is not None:
                principal, dialect = self.principal, pg.dialect

                def on_loop(replay: inline_pg.Replay) -> T:
                    return fn(
                        scoping.Scope(None, principal, factory=inline_pg.no_session, dbapi=replay, dialect=dialect)
                    )

                try:
                    return await pg.run(on_loop)
                except inline_pg.Unavailable:
                    pass
        return await self.run(fn, self.scope)

    async def answer_row(
        self, model: type[BaseModel], table: Any, row_id: str, kind: str, out: Callable[[Any], dict[str, Any]]
    ) -> Response:
        """The row ``row_id`` of ``table`` answered as ``model`` with its ETag (``respond``), read and
        serialized by ``read``."""

        def answer(scope: scoping.Scope) -> Response:
            row = scope.read(table, row_id, kind)
            return respond(model, out(row), row)

        return await self.read(answer)

    def commit(self) -> None:
        """Commit the change and its audit event together."""
        self.scope.commit()
        self.request.state.audited = True


_QUERY_NAMES: dict[int, frozenset[str]] = {}


def _refuse_unknown_query_parameters(request: Request) -> None:
    """422 with the closest valid name for a query parameter the route does not declare (a typo in a
    filter would otherwise silently list everything). An empty query string is not parsed: the parse
    costs microseconds on every authenticated request (bench/bench_identity.py)."""
    if not request.scope.get("query_string") or not request.query_params:
        return
    route = request.scope.get("route")
    if route is None or not hasattr(route, "dependant"):
        return
    names = _QUERY_NAMES.get(id(route))
    if names is None:
        found: set[str] = set()
        todo = [route.dependant]
        while todo:
            dependant = todo.pop()
            found.update(f.alias for f in dependant.query_params)
            todo.extend(dependant.dependencies)
        names = _QUERY_NAMES[id(route)] = frozenset(found)
    unknown = sorted(set(request.query_params) - names)
    if unknown:
        near = errors.closest(unknown[0], names)
        valid = ", ".join(sorted(names)) or "none"
        raise errors.InvalidInputError(
            f"unknown query parameter '{unknown[0]}'",
            hint=(f"did you mean '{near[0]}'? " if near else "") + f"valid: {valid}",
            parameter=unknown[0],
        )


def _authenticate(
    engine: sa.Engine, token: str | None, session: tuple[str | None, str, str | None]
) -> principals.Principal:
    """``session``: (session cookie, method, CSRF header), as ``_session_of`` reads them."""
    cookie, method, csrf = session
    with engine.connect() as conn:  # a bare connection: cheaper than a session, on every request
        return resolve.authenticate(conn, token, cookie, method, csrf)


def _session_of(request: Request, token: str | None = None) -> tuple[str | None, str, str | None]:
    """(session cookie, method, CSRF header) for ``identity.resolve``; with a bearer ``token`` (which
    wins over any cookie there) the cookies are not parsed."""
    if token is not None:
        return None, request.method, None
    return request.cookies.get(sessions.COOKIE), request.method, request.headers.get(sessions.CSRF_HEADER)


async def run_db(request: Request, fn: Callable[..., T], *args: Any) -> T:
    """Run the blocking database call ``fn(*args)`` from async code, in a worker thread: the event loop
    only parses and answers, so ``/healthz`` and the requests queued behind a busy one never wait for a
    query (at 256 connections, queries run on the loop would delay each answer by all the queued ones)."""
    return await run_in_threadpool(fn, *args)


async def _touch(request: Request, conn: sa.Connection | None, key_id: str) -> None:
    """Record the key's last use (``identity.keyuse``) on the request's connection, or on a new one. In a
    worker thread: a write may wait for SQLite's write lock."""
    address = request.client.host if request.client else None
    if conn is not None:
        await run_in_threadpool(keyuse.touch, conn, key_id, address)
        return

    def on_own_connection() -> None:
        with request.app.state.engine.connect() as own:
            keyuse.touch(own, key_id, address)

    await run_in_threadpool(on_own_connection)


async def _take_slot(request: Request) -> None:
    """A database slot for this request (``pool.Gate``), given back by ``RequestIdMiddleware``."""
    if "db_slot" not in request.scope["state"]:
        gate: pool.Gate = request.app.state.db_gate
        request.scope["state"]["db_slot"] = await gate.acquire(getattr(request.state, "request_id", "-"))


def _connect_and_authenticate(
    engine: sa.Engine, token: str | None, session: tuple[str | None, str, str | None]
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
            return resolve.check(conn, token, *_session_of(request, token), cache=request.app.state.principal_cache)
        except inline.Busy:
            return None


async def _check_pg(request: Request, reader: inline_pg.Reader, token: str | None) -> sessions.Checked | None:
    """``resolve.check`` awaited on PostgreSQL's inline connections; None when they cannot serve it now."""
    session, cache, dialect = _session_of(request, token), request.app.state.principal_cache, reader.dialect

    def check(replay: inline_pg.Replay) -> sessions.Checked:
        conn: Any = inline_pg.Statements(replay, dialect)
        return resolve.check(conn, token, *session, cache=cache)

    try:
        return await reader.run(check)
    except inline_pg.Unavailable:
        return None


async def _authenticate_inline(request: Request, token: str | None) -> principals.Principal | None:
    """The principal, read on the event loop (``api/inline.py``, ``api/inline_pg.py``); a write the
    lookup calls for (a session's ``last_seen_at``, once a minute, or its end) runs in a worker thread on
    a pooled connection. ``None`` when the inline connection cannot serve it now (then the caller reads
    in a thread)."""
    state = request.app.state
    if state.inline_reader is not None:
        checked = _check_sqlite(request, state.inline_reader, token)
    else:
        checked = await _check_pg(request, state.inline_pg, token)
    if checked is None:
        return None
    if checked.write is not None:
        await _take_slot(request)

        def write() -> None:
            with request.app.state.engine.connect() as own:
                sessions.apply(own, checked)

        await run_in_threadpool(write)
    return sessions.outcome(checked)


async def _principal(request: Request, token: str | None) -> tuple[sa.Connection | None, principals.Principal]:
    """(the connection kept for the request's reads, or None; the authenticated principal)."""
    state = request.app.state
    if state.inline_reader is not None or state.inline_pg is not None:
        found = await _authenticate_inline(request, token)
        if found is not None:
            await _take_slot(request)
            return None, found
    await _take_slot(request)
    if state.db_shared:
        # SQLite: one pooled connection serves the key lookup and the reads of the request (closed
        # by RequestIdMiddleware); cheaper than a connection per query.
        conn, principal = await run_in_threadpool(_connect_and_authenticate, state.engine, token, _session_of(request))
        request.state.conn = conn
        return conn, principal
    return None, await run_in_threadpool(_authenticate, state.engine, token, _session_of(request))


def bearer_token(authorization: str | None) -> str | None:
    """The credentials of an ``Authorization: Bearer ...`` header, None for any other or none (as
    FastAPI's ``HTTPBearer(auto_error=False)`` reads it; read here, not as a nested dependency, which
    FastAPI solves at a cost on every request: bench/bench_identity.py)."""
    scheme, credentials = get_authorization_scheme_param(authorization)
    if not (authorization and scheme and credentials) or scheme.lower() != "bearer":
        return None
    return credentials


def require(scope_name: str) -> Callable[..., Awaitable[Ctx]]:
    """Dependency: authenticate, then demand ``scope_name`` (401 / 403). ``.required_scope`` on the
    returned function lets tests build the authorization matrix from the route table."""

    async def dependency(request: Request) -> Ctx:
        state = request.app.state
        token = bearer_token(request.headers.get("authorization"))
        _refuse_unknown_query_parameters(request)
        conn, principal = await _principal(request, token)
        request.state.principal = principal
        is_key = principal.user_id is None and principal.role != principals.NODE_ROLE
        if is_key and keyuse.due(principal.key_id):
            await _touch(request, conn, principal.key_id)
        principal.require(scope_name)

        def open_session() -> orm.Session:
            # Closed (rolled back unless committed) by RequestIdMiddleware once the answer is sent. The
            # connection of the key lookup goes back to the pool first: one connection per request.
            held = request.scope["state"].pop("conn", None)
            if held is not None:
                held.close()
            session: orm.Session = state.sessionmaker()
            request.state.db = session
            return session

        return Ctx(
            request=request,
            scope=scoping.Scope(None, principal, factory=open_session, engine=state.engine, connection=conn),
        )

    dependency.required_scope = scope_name  # type: ignore[attr-defined]
    dependency.__name__ = f"require_{scope_name.replace(':', '_')}"
    return dependency


def etag(row: Any) -> str:
    """Strong ETag of a versioned row: ``"<id>.v<version>"``."""
    return f'"{row.id}.v{row.version}"'


def check_if_match(request: Request, row: Any) -> None:
    """412 when ``If-Match`` is present and names neither ``*`` nor the row's current ETag. If-Match
    compares strongly (RFC 9110 section 13.1.1): a weak tag (``W/"..."``) never matches."""
    header = request.headers.get("if-match")
    if header is None:
        return
    tags = [t.strip() for t in header.split(",")]
    if "*" not in tags and etag(row) not in tags:
        raise errors.PreconditionFailedError(current_etag=etag(row))


def with_etag(response: Response, row: Any) -> None:
    response.headers["ETag"] = etag(row)


def respond(model: type[BaseModel], data: dict[str, Any], row: Any = None) -> Response:
    """``data`` validated and serialized by ``model`` in one pydantic-core pass (FastAPI would validate
    the dict, dump it and ``json.dumps`` it again), with the row's ETag when given."""
    headers = {"ETag": etag(row)} if row is not None else None
    return Response(model.model_validate(data).model_dump_json(), media_type="application/json", headers=headers)
