"""Work claims between server replicas: PostgreSQL transaction-scoped advisory locks.

``try_claim`` takes a lock for the current transaction without waiting (another replica holds it: skip the
object this pass); ``hold`` waits for it (short critical sections: allocation, network numbers). Both are
released at COMMIT/ROLLBACK, so a crashed replica never leaves a lock behind. On SQLite (one process, the
embedded default) they are no-ops: SQLite serializes writers and the rows' ``version`` columns catch the rest.
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from sqlalchemy import orm


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
