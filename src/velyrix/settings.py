"""Settings, grouped by concern, read from ``VELYRIX_*`` environment variables.

Each group is a frozen dataclass with a docstring per attribute (STYLE.md #13); ``load()`` builds them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


@dataclass(frozen=True)
class PathSettings:
    home: Path = field(default_factory=lambda: Path(_env("VELYRIX_HOME", str(Path.home() / ".velyrix"))))
    """Where Velyrix keeps its state on this machine (SQLite database, keys, CLI credentials)."""


@dataclass(frozen=True)
class DatabaseSettings:
    url: str = field(default_factory=lambda: _env("VELYRIX_DATABASE_URL", ""))
    """SQLAlchemy URL; empty means a SQLite file ``velyrix.db`` under ``VELYRIX_HOME`` (WAL mode)."""


@dataclass(frozen=True)
class Settings:
    paths: PathSettings = field(default_factory=PathSettings)
    database: DatabaseSettings = field(default_factory=DatabaseSettings)

    def database_url(self) -> str:
        """The effective database URL (the SQLite default when none is configured)."""
        if self.database.url:
            return self.database.url
        return f"sqlite:///{self.paths.home / 'velyrix.db'}"


def load() -> Settings:
    """Settings from the current environment (read anew on every call)."""
    return Settings()
