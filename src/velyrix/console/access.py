"""Who a console request acts as: the browser session only (cookie ``velyrix_session``), never a bearer
key. ``reads(scope)`` guards a page, ``acts(scope)`` a form post: the form's ``csrf`` field must be the
session's CSRF token (``identity.sessions.check_csrf``) before anything runs. Both run the API's own
dependency (``api.context.require``), so a console request is authenticated, scoped and refused exactly
like the API call it stands for; their ``.required_scope`` lets the leak test read the route table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Form, Request

from velyrix import errors
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.identity import sessions

CSRF_FIELD = "csrf"


def _cookie(request: Request) -> str:
    secret = request.cookies.get(sessions.COOKIE) or ""
    if not secret:
        raise errors.AuthenticationError("sign in to use the console", hint="open /console/sign-in")
    return secret


def _session_only(request: Request) -> None:
    """Drop any ``Authorization`` header: the API's dependency would take a bearer key over the cookie,
    and the console acts as the browser session only. In place: ``request.headers`` shares this list."""
    raw = request.scope["headers"]
    raw[:] = [(k, v) for k, v in raw if k != b"authorization"]


def reads(scope_name: str) -> Callable[..., Awaitable[Ctx]]:
    """Dependency of a console page: the session's principal with ``scope_name`` (401 / 403)."""
    inner = require(scope_name)

    async def dependency(request: Request) -> Ctx:
        _cookie(request)
        _session_only(request)
        return await inner(request)

    dependency.required_scope = scope_name  # type: ignore[attr-defined]
    dependency.__name__ = f"console_reads_{scope_name.replace(':', '_')}"
    return dependency


def acts(scope_name: str) -> Callable[..., Awaitable[Ctx]]:
    """Dependency of a console form post: the form's CSRF token checked against the session (403
    ``identity_csrf_failed``), then the API's own check of the session with that token (which it reads
    from the ``X-CSRF-Token`` header, where a script would have put it) and of ``scope_name``."""
    inner = require(scope_name)

    async def dependency(request: Request, csrf: str = Form("", max_length=200)) -> Ctx:
        secret = _cookie(request)
        sessions.check_csrf(secret, csrf)
        name = sessions.CSRF_HEADER.encode()
        raw = request.scope["headers"]  # in place: ``request.headers`` (already read) shares this list
        raw[:] = [(k, v) for k, v in raw if k != name] + [(name, csrf.encode())]
        _session_only(request)
        return await inner(request)

    dependency.required_scope = scope_name  # type: ignore[attr-defined]
    dependency.__name__ = f"console_acts_{scope_name.replace(':', '_')}"
    return dependency
