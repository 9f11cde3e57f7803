"""Who a request acts as, beside bearer keys: a bearer ``Authorization`` header wins; without one, the
browser session cookie (``sessions``), whose mutations must carry the session's CSRF token."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.auth import principals
from velyrix.controlplane.identity import sessions

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def authenticate(
    conn: sa.Connection | orm.Session,
    token: str | None,
    cookie: str | None = None,
    method: str = "GET",
    csrf: str | None = None,
) -> principals.Principal:
    """The principal of a bearer ``token``, else of the session ``cookie``; 401 / 403 (CSRF) otherwise."""
    if token is not None or not cookie:
        return principals.authenticate(conn, token)
    return sessions.authenticate(conn, cookie, mutating=method in MUTATING, csrf=csrf)
