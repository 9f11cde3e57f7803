"""RFC 9457 problem+json: the ONE place where exceptions become HTTP answers.

``velyrix.errors`` classes carry the status and the stable ``code``; request validation, unknown
routes, optimistic-lock losses and constraint violations are mapped here too. Every refused or failed
mutation (POST/PUT/PATCH/DELETE) also writes its audit event here, in its own transaction.
"""

from __future__ import annotations

import errno
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import exc as orm_exc
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from velyrix import errors
from velyrix.controlplane import audit
from velyrix.controlplane.api import context, pool

log = logging.getLogger("velyrix.api")
MEDIA_TYPE = "application/problem+json"
PROBLEM_BASE = "https://velyrix.dev/problems/"

_HTTP_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    412: "precondition_failed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
}
RETRY_AFTER_S = 5
"""What a 503 (database or disk unavailable) tells clients to wait before retrying (``Retry-After``)."""


def problem(
    request: Request,
    status: int,
    code: str,
    detail: str,
    *,
    hint: str | None = None,
    extra: dict[str, Any] | None = None,
) -> JSONResponse:
    """A problem+json response (and, for mutations, the audit event of the refusal)."""
    body: dict[str, Any] = {
        "type": PROBLEM_BASE + code,
        "title": code.replace("_", " "),
        "status": status,
        "detail": detail,
        "code": code,
        "instance": request.url.path,
        "request_id": getattr(request.state, "request_id", None),
    }
    if hint:
        body["hint"] = hint
    if extra:
        body.update({k: v for k, v in extra.items() if k not in body})
    _audit_refusal(request, status, code)
    headers = {"WWW-Authenticate": 'Bearer realm="velyrix"'} if status == 401 else {}
    if status == 503:
        headers["Retry-After"] = str(RETRY_AFTER_S)
    return JSONResponse(jsonable_encoder(body), status_code=status, media_type=MEDIA_TYPE, headers=headers or None)


def _audit_refusal(request: Request, status: int, code: str) -> None:
    if request.method not in audit.MUTATING_METHODS or getattr(request.state, "audited", False):
        return
    route = request.scope.get("route")
    action = getattr(route, "name", None) or f"{request.method} {request.url.path}"
    principal = getattr(request.state, "principal", None)
    try:
        with request.app.state.sessionmaker() as session:
            audit.record(
                session,
                context.request_info(request),
                principal,
                action=action,
                target=request.url.path,
                outcome="error" if status >= 500 else "denied",
                status_code=status,
                error_code=code,
            )
            session.commit()
        request.state.audited = True
    except Exception:  # the refusal must still be answered; the failure is logged
        log.exception("could not write the audit event of a refused request")


def _velyrix_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, errors.VelyrixError)
    extra = {k: v for k, v in exc.to_dict().get("fields", {}).items()}
    if exc.http_status >= 500:
        log.error("request %s failed: %s", getattr(request.state, "request_id", "-"), exc.message)
    return problem(request, exc.http_status, exc.code, exc.message, hint=exc.hint, extra=extra)


async def refuse(request: Request, exc: errors.VelyrixError) -> JSONResponse:
    """The answer to a request the validation edge refused (``edge.EdgeMiddleware``)."""
    return await run_in_threadpool(_velyrix_error, request, exc)


def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    issues = [
        {"loc": [str(p) for p in e.get("loc", ())], "message": e.get("msg", ""), "type": e.get("type", "")}
        for e in exc.errors()
    ]
    first = issues[0] if issues else {"loc": [], "message": "invalid request"}
    where = ".".join(first["loc"])
    return problem(
        request,
        422,
        "invalid_request",
        f"{where}: {first['message']}" if where else str(first["message"]),
        hint="see 'errors' for every invalid field; the schema is at /openapi.json",
        extra={"errors": issues},
    )


def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    response = problem(request, exc.status_code, code, str(exc.detail))  # detail: str for HTTP errors
    for name, value in (exc.headers or {}).items():
        response.headers[name] = value
    if exc.status_code == 405:  # RFC 9110 section 15.5.6: every method of every route on this path
        response.headers["Allow"] = ", ".join(allowed_methods(request))
    return response


def allowed_methods(request: Request) -> list[str]:
    """The methods some route of the app answers on ``request``'s path (Starlette names only the first)."""
    methods: set[str] = set()
    todo = list(request.app.router.routes)
    while todo:
        route = todo.pop()
        inner = getattr(route, "original_router", None)  # FastAPI keeps included routers whole
        if inner is not None:
            todo.extend(inner.routes)
        elif getattr(route, "path_regex", None) is not None and route.path_regex.match(request.url.path):
            methods.update(getattr(route, "methods", None) or ())
    return sorted(methods)


def _stale(request: Request, exc: Exception) -> JSONResponse:
    if "if-match" not in request.headers:  # the client asserted nothing: another writer won the race
        return _velyrix_error(request, ConcurrentUpdateError())
    return _velyrix_error(request, errors.PreconditionFailedError())


class ConcurrentUpdateError(errors.ConflictError):
    """A write without If-Match lost a race against another writer (a reconciler, another client)."""

    code = "concurrent_update"
    template = "the object changed while this request was writing it (another writer won); nothing was changed"

    def __init__(self) -> None:
        super().__init__(hint="read the object again and retry (send If-Match with its ETag to be sure)")


def _integrity(request: Request, exc: Exception) -> JSONResponse:
    return _velyrix_error(
        request,
        errors.ConflictError(
            "the request conflicts with the current state (a name already taken, or a reference in use)"
        ),
    )


def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    """The database is unreachable, refuses connections, or its disk is full: 503, retry later."""
    log.error("request %s: storage unavailable: %s", getattr(request.state, "request_id", "-"), exc)
    return _velyrix_error(request, UnavailableError(reason=_reason(exc)))


def _reason(exc: Exception) -> str:
    text = str(getattr(exc, "orig", None) or exc).lower()
    if "full" in text or "no space" in text or getattr(exc, "errno", None) == errno.ENOSPC:
        return "the disk is full"
    return "the database is unreachable"


class UnavailableError(errors.VelyrixError):
    """The control plane's storage cannot serve the request now (database down, disk full)."""

    code = "service_unavailable"
    http_status = 503
    user_error = False
    template = "storage unavailable: {reason}; nothing was changed, retry later"


def _pool_timeout(request: Request, exc: Exception) -> JSONResponse:
    """No connection came free within the pool's timeout (``db/pooling.py``): 503, retry later."""
    gate = request.app.state.db_gate
    log.warning("request %s: 503, no database connection: %s", getattr(request.state, "request_id", "-"), exc)
    return _velyrix_error(request, pool.PoolExhaustedError(slots=gate.slots, wait_s=gate.wait_s))


def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
        return _unavailable(request, exc)
    log.exception("unexpected error in request %s", getattr(request.state, "request_id", "-"))
    return problem(request, 500, "internal_error", "internal error; the request id identifies it in the logs")


def install(app: FastAPI) -> None:
    """Register every handler on ``app``."""
    app.add_exception_handler(errors.VelyrixError, _velyrix_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(orm_exc.StaleDataError, _stale)
    app.add_exception_handler(sa_exc.IntegrityError, _integrity)
    app.add_exception_handler(sa_exc.OperationalError, _unavailable)
    app.add_exception_handler(sa_exc.InterfaceError, _unavailable)
    app.add_exception_handler(sa_exc.TimeoutError, _pool_timeout)
    app.add_exception_handler(Exception, _unexpected)
