"""Database pool sizes per backend, from ``velyrix.settings.DatabaseSettings`` with sane defaults; the API
takes at most ``PoolConfig.slots`` of them for requests (``controlplane/api/pool.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from velyrix import settings

DEFAULTS: dict[str, tuple[int, int]] = {
    # SQLite: one writer at a time; more connections only add readers that contend for the GIL
    "sqlite": (8, 8),
    # PostgreSQL: 20 per replica stays under its default max_connections = 100 with four replicas
    "postgresql": (10, 10),
}
"""(pool size, overflow) per backend when the settings leave them at 0."""
RESERVE = 2
"""Connections of the pool that requests never take (audit checkpoints, sweeps, ``/readyz``)."""


@dataclass(frozen=True)
class PoolConfig:
    """Pool size and overflow (connections), the API's slots, and the seconds a request waits for a slot
    (or, outside the API, ``engine.connect()`` for a connection)."""

    pool_size: int
    max_overflow: int
    wait_s: float

    @property
    def slots(self) -> int:
        return max(1, self.pool_size + self.max_overflow - RESERVE)

    def engine_options(self) -> dict[str, Any]:
        """``sqlalchemy.create_engine`` keyword arguments of this pool."""
        return {"pool_size": self.pool_size, "max_overflow": self.max_overflow, "pool_timeout": self.wait_s}


def config(backend: str, db: settings.DatabaseSettings | None = None) -> PoolConfig:
    """The pool of ``backend`` (``sqlite`` or ``postgresql``): the settings' sizes, else ``DEFAULTS``."""
    db = db or settings.load().database
    size, overflow = DEFAULTS.get(backend, DEFAULTS["postgresql"])
    return PoolConfig(
        pool_size=db.pool_size or size,
        max_overflow=db.max_overflow if db.max_overflow >= 0 else overflow,
        wait_s=db.pool_wait_s,
    )


def slots_of(engine: Any, default: PoolConfig) -> int:
    """Requests that may hold connections of ``engine`` at once: its pool's size and overflow less
    ``RESERVE`` (``default.slots`` for a pool without a size, such as SQLite's in-memory one)."""
    pool = engine.pool
    if not hasattr(pool, "size") or not hasattr(pool, "_max_overflow"):
        return default.slots
    return max(1, int(pool.size()) + max(int(pool._max_overflow), 0) - RESERVE)
