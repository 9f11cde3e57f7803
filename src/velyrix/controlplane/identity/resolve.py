"""Who a request acts as, beside bearer keys: a bearer ``Authorization`` header wins; without one, the
browser session cookie (``sessions``), whose mutations must carry the session's CSRF token."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.auth import keys, principals
from velyrix.controlplane.db import models
from velyrix.controlplane.identity import sessions, verified

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


def check(
    conn: sa.Connection,
    token: str | None,
    cookie: str | None = None,
    method: str = "GET",
    csrf: str | None = None,
    cache: verified.Cache | None = None,
) -> sessions.Checked:
    """``authenticate``'s reads only: the principal, or the refusal with the write it calls for
    (``sessions.apply``, then ``sessions.outcome``); refusals that need no write are raised. With a
    ``cache`` (``verified``), a row of the current credential generation stands in for the lookup
    when the checks pass on it without a write; otherwise they run again on the row read afresh."""
    if cache is None:
        return _check(conn, token, cookie, method, csrf, None)
    source = cache.source(conn)
    digest = key_digest(token)
    if digest is not None:
        known = source.known(principals.BY_DIGEST, digest)
        if known is not None and principals.usable(known[0], models.utcnow()):
            return sessions.Checked(known[1])
    try:
        checked = _check(conn, token, cookie, method, csrf, source.first)
    except errors.VelyrixError:
        if source.hit is None:
            raise
        checked = None
    if source.hit is not None and (checked is None or checked.principal is None or checked.write is not None):
        cache.drop(source.hit)
        return _check(conn, token, cookie, method, csrf, source.fresh)
    assert checked is not None  # a refusal without a cached row was raised above
    if digest is not None and checked.principal is not None and checked.write is None:
        source.keep(principals.BY_DIGEST, digest, checked.principal)
    return checked


def key_digest(token: str | None) -> str | None:
    """The SHA-256 of ``token`` when it has an API key's prefix and length, else None. A cached row found
    by it is that key's own (the digest of its secret), so its format was checked when it was issued."""
    if token is None or len(token) != keys.TOKEN_LEN or not token.startswith(keys.PREFIX):
        return None
    return keys.digest(token)


def _check(
    conn: sa.Connection,
    token: str | None,
    cookie: str | None,
    method: str,
    csrf: str | None,
    first: verified.First | None,
) -> sessions.Checked:
    if token is not None or not cookie:
        return sessions.Checked(principals.authenticate(conn, token, first=first))
    return sessions.check(conn, cookie, mutating=method in MUTATING, csrf=csrf, first=first)
