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
class NocSettings:
    sweep_s: float = field(default_factory=lambda: float(_env("VELYRIX_NOC_SWEEP_S", "30")))
    """Seconds between escalation sweeps of ``velyrix server`` (0: no sweeps)."""
    smtp_host: str = field(default_factory=lambda: _env("VELYRIX_SMTP_HOST", "127.0.0.1"))
    """SMTP server that email pages go through."""
    smtp_port: int = field(default_factory=lambda: int(_env("VELYRIX_SMTP_PORT", "25")))
    """Its TCP port."""
    pagerduty_routing_key: str = field(default_factory=lambda: _env("VELYRIX_PAGERDUTY_ROUTING_KEY", "velyrix"))
    """``routing_key`` of the PagerDuty Events v2 pages."""


@dataclass(frozen=True)
class Settings:
    paths: PathSettings = field(default_factory=PathSettings)
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    noc: NocSettings = field(default_factory=NocSettings)

    def database_url(self) -> str:
        """The effective database URL (the SQLite default when none is configured)."""
        if self.database.url:
            return self.database.url
        return f"sqlite:///{self.paths.home / 'velyrix.db'}"


def load() -> Settings:
    """Settings from the current environment (read anew on every call)."""
    return Settings()
