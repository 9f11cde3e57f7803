"""Apply the Alembic migrations shipped inside the package (``velyrix db upgrade`` and server start)."""

from __future__ import annotations

from importlib import resources

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from velyrix.controlplane.db import engine as engine_mod


def _config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("velyrix.controlplane.db") / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str | None = None, revision: str = "head", engine: sa.Engine | None = None) -> str:
    """Migrate the database at ``url`` (or the configured one) to ``revision``; returns the new revision."""
    url = engine_mod.database_url(url)
    cfg = _config(url)
    own = engine is None
    eng = engine if engine is not None else engine_mod.make_engine(url)
    try:
        with eng.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
        return current(eng) or ""
    finally:
        if own:
            eng.dispose()


def current(engine: sa.Engine) -> str | None:
    """The revision the database is at (None before the first migration)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head() -> str:
    """The newest revision shipped in the package."""
    return ScriptDirectory.from_config(_config("sqlite://")).get_current_head() or ""


def readiness(engine: sa.Engine) -> tuple[str | None, bool]:
    """``(schema revision, disk full)`` of ``engine``'s database, for ``/readyz``."""
    return current(engine), engine_mod.disk_full(engine)
