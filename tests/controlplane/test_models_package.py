"""The ORM models live in one package by area: importing it registers every table, and the migrations create
exactly those tables with the columns the models declare (what Alembic's env compares against)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from velyrix.controlplane.db import migrate, models


def test_the_migrations_create_every_table_of_the_models_package_and_no_other(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v.db'}"
    migrate.upgrade(url)
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        migrated = set(inspector.get_table_names()) - {"alembic_version"}
        assert migrated == set(models.Base.metadata.tables)
        for name, table in models.Base.metadata.tables.items():
            assert {c["name"] for c in inspector.get_columns(name)} == {c.name for c in table.columns}, name
    finally:
        engine.dispose()
    for area in (models.cloud, models.evidence, models.identity, models.noc):  # the areas moved into the package
        tables = {v.__tablename__ for v in vars(area).values() if isinstance(v, type) and hasattr(v, "__table__")}
        assert tables and tables <= migrated, area.__name__
