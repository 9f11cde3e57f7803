"""Work claims between server replicas: PostgreSQL transaction-scoped advisory locks.

``try_claim`` takes a lock for the current transaction without waiting (another replica holds it: skip the
object this pass); ``hold`` waits for it (short critical sections: allocation, network numbers). Both are
released at COMMIT/ROLLBACK, so a crashed replica never leaves a lock behind. On SQLite (one process, the
embedded default) ``try_claim`` is a no-op (SQLite serializes writers and the rows' ``version`` columns catch
the rest) and ``hold`` takes a process-wide lock of that name until the session's transaction ends, so that a
check-then-write section (capacity before a cluster is declared, allocation) runs one at a time.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event, orm

from velyrix import errors

LOCAL_WAIT_S = 30.0
"""How long ``hold`` waits for a process-wide lock on SQLite before answering busy."""

_LOCAL: dict[str, threading.Lock] = {}
_LOCAL_GUARD = threading.Lock()


def key(name: str) -> int:
    """A signed 64-bit lock key for ``name`` (stable across processes and versions)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _postgres(session: orm.Session) -> bool:
    return session.get_bind().dialect.name == "postgresql"


def try_claim(session: orm.Session, name: str) -> bool:
    """Claim ``name`` for this transaction; False when another transaction holds it."""
    if not _postgres(session):
        return True
    return bool(session.execute(sa.text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": key(name)}).scalar())


def hold(session: orm.Session, name: str) -> None:
    """Wait for ``name`` and hold it until the transaction ends."""
    if _postgres(session):
        session.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": key(name)})
        return
    held: dict[str, threading.Lock] = session.info.setdefault("velyrix_local_locks", {})
    if name in held:
        return
    with _LOCAL_GUARD:
        lock = _LOCAL.setdefault(name, threading.Lock())
    if not lock.acquire(timeout=LOCAL_WAIT_S):
        raise errors.BusyError(what=name, hint="another request holds it; retry")
    held[name] = lock
    if not session.info.get("velyrix_local_release"):
        session.info["velyrix_local_release"] = True
        event.listen(session, "after_transaction_end", _release_local)


def _release_local(session: orm.Session, transaction: Any) -> None:
    if transaction.parent is not None:
        return
    for lock in session.info.pop("velyrix_local_locks", {}).values():
        lock.release()
