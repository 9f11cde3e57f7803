"""Rendering of console pages: the Jinja2 environment over ``templates/`` (autoescaped), the page
helper that adds the signed-in user and the session's CSRF token, the static files (``static/``: the
console's CSS and the pinned htmx builds that scripts/bootstrap.sh copies from ``assets/``), and
``install``: refusals on console paths answered as an HTML page (401: to the sign-in page) after the
API's own problem handler has recorded them."""

from __future__ import annotations

import inspect
import urllib.parse
from pathlib import Path
from typing import Any

import jinja2
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from velyrix import errors
from velyrix.controlplane.identity import login, sessions

HERE = Path(__file__).parent
STATIC = HERE / "static"
PREFIX = "/console"
ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=jinja2.select_autoescape(("html",)),
    undefined=jinja2.StrictUndefined,
)
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
SECURITY_HEADERS = {
    # scripts and styles from this origin only (no CDN); no framing; no inline script
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}


def html(template: str, status: int = 200, **values: Any) -> HTMLResponse:
    """``template`` rendered with ``values`` (autoescaped) as an HTML answer with the console's headers."""
    body = ENV.get_template(template).render(**values)
    return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS)


def page(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
    """A signed-in page: ``values`` plus ``principal`` and ``csrf`` (for the page's forms)."""
    principal = getattr(request.state, "principal", None)
    csrf = sessions.csrf_token(request.cookies.get(sessions.COOKIE, "")) if principal is not None else ""
    return html(template, status, principal=principal, csrf=csrf, **values)


def static_file(name: str) -> Response:
    """A file of ``static/`` (its top level or ``vendor/``), 404 for anything else."""
    path = (STATIC / name).resolve()
    kind = STATIC_TYPES.get(path.suffix)
    if kind is None or not path.is_file() or STATIC.resolve() not in path.parents:
        raise errors.NotFoundError(kind="console asset", name=name[:100])
    headers = {"cache-control": "public, max-age=3600", "x-content-type-options": "nosniff"}
    return Response(path.read_bytes(), media_type=kind, headers=headers)


def install(app: FastAPI) -> None:
    """Answer refusals on ``/console`` paths in HTML: the API's problem handler runs first (its audit
    event); a request the route's parameters refuse (422) gets the same page with its first error."""
    api_handler = app.exception_handlers[errors.VelyrixError]
    validation_handler = app.exception_handlers[RequestValidationError]

    async def refused(request: Request, exc: Exception) -> Response:
        answer = await _call(api_handler, request, exc)
        if not request.url.path.startswith(PREFIX) or not isinstance(exc, errors.VelyrixError):
            return answer
        if exc.http_status == 401 and request.method == "GET":
            return RedirectResponse(sign_in_url(request), status_code=303)
        return page(request, "refused.html", exc.http_status, error=exc)

    async def invalid(request: Request, exc: Exception) -> Response:
        answer = await _call(validation_handler, request, exc)
        if not request.url.path.startswith(PREFIX) or not isinstance(exc, RequestValidationError):
            return answer
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        error = errors.InvalidInputError(f"{where}: {first.get('msg', 'invalid request')}")
        return page(request, "refused.html", answer.status_code, error=error)

    app.add_exception_handler(errors.VelyrixError, refused)
    app.add_exception_handler(RequestValidationError, invalid)


def sign_in_url(request: Request) -> str:
    """The sign-in page with ``next``: the page asked for (path and query), where the browser lands after
    single sign-on (``identity.login.console_target`` decides whether it may)."""
    asked = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return f"{PREFIX}/sign-in?" + urllib.parse.urlencode({"next": asked[: login.MAX_NEXT_CHARS]})


async def _call(handler: Any, request: Request, exc: Exception) -> Response:
    if inspect.iscoroutinefunction(handler):
        answer: Response = await handler(request, exc)
        return answer
    done: Response = await run_in_threadpool(handler, request, exc)
    return done
