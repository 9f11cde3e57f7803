"""Per-request plumbing: request ids and access logs (ASGI middleware), the database session, and
``require(scope)``, the dependency every ``/v1`` route declares: it authenticates the bearer key or the
session (``api/authn.py``), with a database slot (``api/pool.py``: 503 after a bounded wait) taken at once
or, for a lazy route, only when a pooled connection is used; checks the scope and hands the route a
``Ctx`` (the tenant-scoped query layer plus audit). No connection is ever waited for on the event
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
from pydantic import BaseModel
from sqlalchemy import orm
from starlette.concurrency import run_in_threadpool

from velyrix import errors
from velyrix.controlplane import audit, scoping
from velyrix.controlplane.api import authn, inline, inline_pg, pool
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models

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
    scope_name: str = ""
    """The scope ``require`` demanded."""
    pending: authn.Pending | None = None
    """A lazy route's principal not confirmed yet (``api/authn.py``'s ``ahead``): ``read`` confirms it
    with its first statement, ``run`` and ``confirm`` on their own; ``scope`` reads nothing until then."""

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
        """``fn(*args)`` (a database call) from an async route, with a database slot; see ``run_db``."""
        if self.pending is not None:
            await self.confirm()
        await authn.take_slot(self.request)
        return await run_db(self.request, fn, *args)

    async def confirm(self) -> None:
        """Authenticate a pending principal as ``require`` does for any request (401 / 403 when the
        credential no longer allows it); nothing for a confirmed one."""
        if self.pending is None:
            return
        request = self.request
        request.state.principal = None
        token = authn.bearer_token(request.headers.get("authorization"))
        conn, principal = await authn.authorized(request, token, self.scope_name, lazy=True)
        self.scope, self.pending = _scope_of(request, principal, conn), None

    async def read(self, fn: Callable[[scoping.Scope], T]) -> T:
        """``fn(scope)``, a read of a few rows: on the event loop (SQLite in-process, ``api/inline.py``;
        PostgreSQL awaited on psycopg's asynchronous connections, ``api/inline_pg.py``, a pending
        principal's generation read in the same statement), else (the inline connection in use, busy,
        broken or slow, a read it does not cover) ``fn(self.scope)`` in a worker thread, with a database
        slot. ``fn`` only reads through the scope it is given (it may run more than once)."""
        state = self.request.app.state
        if not self.scope.session_open:
            reader: inline.Reader | None = state.inline_reader
            if reader is not None and self.pending is None:
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
                    return await pg.run(on_loop, self.pending.generation if self.pending is not None else None)
                except inline_pg.Unavailable:  # also Moved: the credential is checked again
                    pass
        if self.pending is not None:
            await self.confirm()
            return await self.read(fn)
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


async def run_db(request: Request, fn: Callable[..., T], *args: Any) -> T:
    """Run the blocking database call ``fn(*args)`` from async code, in a worker thread: the event loop
    only parses and answers, so ``/healthz`` and the requests queued behind a busy one never wait for a
    query (at 256 connections, queries run on the loop would delay each answer by all the queued ones)."""
    return await run_in_threadpool(fn, *args)


def require(scope_name: str, *, lazy: bool = False) -> Callable[..., Awaitable[Ctx]]:
    """Dependency: authenticate, then demand ``scope_name`` (401 / 403). ``.required_scope`` on the
    returned function lets tests build the authorization matrix from the route table.

    ``lazy``, for an async route that reaches the database only through ``Ctx.read``, ``Ctx.answer_row``
    and ``Ctx.run`` and uses ``ctx.principal`` only after one of them: a database slot is taken only when
    a pooled connection is used (``api/authn.py``), and on PostgreSQL a cached API key is handed over
    pending, its credential generation read with the route's first statement (one round trip in all)."""

    async def dependency(request: Request) -> Ctx:
        token = authn.bearer_token(request.headers.get("authorization"))
        _refuse_unknown_query_parameters(request)
        if lazy:
            pending = authn.ahead(request, token, scope_name)
            if pending is not None:
                request.state.principal = pending.principal
                unread = scoping.Scope(None, pending.principal, factory=_unconfirmed)
                return Ctx(request=request, scope=unread, scope_name=scope_name, pending=pending)
        conn, principal = await authn.authorized(request, token, scope_name, lazy=lazy)
        return Ctx(request=request, scope=_scope_of(request, principal, conn), scope_name=scope_name)

    dependency.required_scope = scope_name  # type: ignore[attr-defined]
    dependency.__name__ = f"require_{scope_name.replace(':', '_')}"
    return dependency


def _scope_of(request: Request, principal: principals.Principal, conn: sa.Connection | None) -> scoping.Scope:
    """The principal's scope for a route: reads on ``conn`` (SQLite's connection of the key lookup) or on
    short connections, a session made on first use (in a worker thread that holds the request's slot)."""
    state = request.app.state

    def open_session() -> orm.Session:
        # Closed (rolled back unless committed) by RequestIdMiddleware once the answer is sent. The
        # connection of the key lookup goes back to the pool first: one connection per request.
        if not authn.holds_slot(request):
            raise RuntimeError("a session without a database slot: a lazy route must reach it through Ctx.run")
        held = request.scope["state"].pop("conn", None)
        if held is not None:
            held.close()
        session: orm.Session = state.sessionmaker()
        request.state.db = session
        return session

    return scoping.Scope(None, principal, factory=open_session, engine=state.engine, connection=conn)


def _unconfirmed() -> orm.Session:
    raise RuntimeError("the principal is not confirmed yet: a lazy route reads through Ctx.read or Ctx.run")


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
