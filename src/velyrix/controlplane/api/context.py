"""Per-request plumbing: request ids and access logs (ASGI middleware), the database session, and
``require(scope)``, the dependency every ``/v1`` route declares: it authenticates the bearer key,
checks the scope and hands the route a ``Ctx`` (the tenant-scoped query layer plus audit)."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane import audit, scoping
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models

log = logging.getLogger("velyrix.api")
_bearer = HTTPBearer(auto_error=False, description="API key: `Authorization: Bearer vlx_...`")


class RequestIdMiddleware:
    """Gives every request an id (``X-Request-ID`` response header, ``request.state.request_id``) and
    logs one line per request with it. Pure ASGI: cheaper than ``BaseHTTPMiddleware``."""

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
            if log.isEnabledFor(logging.INFO):
                principal = scope["state"].get("principal")
                log.info("%s %s %s %.1fms request_id=%s key=%s", scope["method"], scope["path"], status,
                         (time.perf_counter() - started) * 1000, request_id,
                         principal.key_id if principal else "-")


def request_info(request: Request) -> audit.RequestInfo:
    client = request.client
    return audit.RequestInfo(request_id=getattr(request.state, "request_id", "req_none"),
                             source_address=client.host if client else None,
                             method=request.method, path=request.url.path)


def db_session(request: Request) -> Iterator[orm.Session]:
    """One session per request, closed (and rolled back if not committed) at the end."""
    with request.app.state.sessionmaker() as session:
        yield session


@dataclass
class Ctx:
    """What a route gets: the principal's scoped view of the database, and the audit/commit helpers."""

    request: Request
    scope: scoping.Scope

    @property
    def principal(self) -> principals.Principal:
        return self.scope.principal

    def audit(self, target: str, *, status_code: int = 200, outcome: str = "success",
              detail: dict[str, Any] | None = None, tenant_id: str | None = None) -> None:
        """Record this mutation in the current transaction (action = the route's name)."""
        route = self.request.scope.get("route")
        audit.record(self.scope.session, request_info(self.request), self.principal,
                     action=getattr(route, "name", "unknown"), target=target, outcome=outcome,
                     status_code=status_code, detail=detail, tenant_id=tenant_id)

    def commit(self) -> None:
        """Commit the change and its audit event together."""
        self.scope.commit()
        self.request.state.audited = True


def require(scope_name: str) -> Callable[..., Ctx]:
    """Dependency: authenticate, then demand ``scope_name`` (401 / 403). ``.required_scope`` on the
    returned function lets tests build the authorization matrix from the route table."""

    def dependency(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),
                   session: orm.Session = Depends(db_session)) -> Ctx:
        token = credentials.credentials if credentials else None
        principal = principals.authenticate(session, token)
        request.state.principal = principal
        principal.require(scope_name)
        return Ctx(request=request, scope=scoping.Scope(session, principal))

    dependency.required_scope = scope_name  # type: ignore[attr-defined]
    dependency.__name__ = f"require_{scope_name.replace(':', '_')}"
    return dependency


def etag(row: Any) -> str:
    """Strong ETag of a versioned row: ``"<id>.v<version>"``."""
    return f'"{row.id}.v{row.version}"'


def check_if_match(request: Request, row: Any) -> None:
    """412 when ``If-Match`` is present and names neither ``*`` nor the row's current ETag."""
    header = request.headers.get("if-match")
    if header is None:
        return
    tags = [t.strip().removeprefix("W/") for t in header.split(",")]
    if "*" not in tags and etag(row) not in tags:
        raise errors.PreconditionFailedError(current_etag=etag(row))


def with_etag(response: Response, row: Any) -> None:
    response.headers["ETag"] = etag(row)


def as_dict(row: models.Base, fields: tuple[str, ...]) -> dict[str, Any]:
    return {f: getattr(row, f) for f in fields}
