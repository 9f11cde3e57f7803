"""API keys' details beside their rights: a description, the user a key belongs to, and its last use.

The last use is written at most once per ``TOUCH_INTERVAL_S`` per key and process (so ``velyrix keys
list`` shows it to the minute) in a short transaction of its own: authentication stays a single
read on every other request (``bench/bench_identity.py`` measures it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import ApiKeyDetail

log = logging.getLogger("velyrix.identity")
TOUCH_INTERVAL_S = 60.0
_D = ApiKeyDetail
_touched: dict[str, float] = {}
_lock = threading.Lock()


def due(key_id: str) -> bool:
    """True (and remembered) when ``key_id``'s last use has not been written for ``TOUCH_INTERVAL_S``."""
    now = time.monotonic()
    with _lock:
        if now - _touched.get(key_id, -TOUCH_INTERVAL_S) < TOUCH_INTERVAL_S:
            return False
        _touched[key_id] = now
        return True


def is_due(key_id: str) -> bool:
    """Whether ``due(key_id)`` would answer True now; remembers nothing."""
    with _lock:
        return time.monotonic() - _touched.get(key_id, -TOUCH_INTERVAL_S) >= TOUCH_INTERVAL_S


def touch(conn: sa.Connection, key_id: str, address: str | None) -> None:
    """Record that ``key_id`` was used now from ``address``, committing on ``conn``. Best effort: a
    database that refuses the write (locked, read-only) is logged and the request goes on."""
    now = models.utcnow()
    try:
        done = conn.execute(
            sa.update(_D).where(_D.key_id == key_id).values(last_used_at=now, last_used_address=address)
        ).rowcount
        if not done:
            conn.execute(
                sa.insert(_D).values(key_id=key_id, description="", last_used_at=now, last_used_address=address)
            )
        conn.commit()
    except sa.exc.DBAPIError as exc:
        conn.rollback()
        with _lock:
            _touched.pop(key_id, None)
        log.warning("last use of key %s not recorded: %s", key_id, exc.orig)


def _session(db: Any) -> orm.Session:
    """The session of a ``scoping.Scope`` (what routes hold), or ``db`` itself when it is one."""
    return db if isinstance(db, orm.Session) else db.session


def set_details(
    db: Any,
    key_id: str,
    *,
    description: str = "",
    user_id: str | None = None,
    creator_key_id: str | None = None,
) -> None:
    """Store a new key's description and owning user (in the caller's transaction). A key made by a key
    of a user belongs to that user too (so that deactivating the user revokes both). ``db``: a session
    or a ``scoping.Scope``."""
    session = _session(db)
    if user_id is None and creator_key_id is not None:
        user_id = session.scalar(sa.select(_D.user_id).where(_D.key_id == creator_key_id))
    session.add(ApiKeyDetail(key_id=key_id, description=description, user_id=user_id))


def details(db: Any, key_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{key_id: {description, user_id, last_used_at, last_used_address}}`` for the keys that have them
    (``db``: a session or a ``scoping.Scope``)."""
    session = _session(db)
    ids = list(key_ids)
    if not ids:
        return {}
    rows = session.execute(
        sa.select(_D.key_id, _D.description, _D.user_id, _D.last_used_at, _D.last_used_address).where(
            _D.key_id.in_(ids)
        )
    )
    return {r.key_id: r._asdict() for r in rows}


def keys_of_user(session: orm.Session, user_id: str) -> list[str]:
    """Ids of the keys made by or for ``user_id``."""
    return list(session.scalars(sa.select(_D.key_id).where(_D.user_id == user_id)))
