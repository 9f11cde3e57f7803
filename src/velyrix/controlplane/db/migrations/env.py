"""Alembic environment: runs on the connection handed over by ``velyrix.controlplane.db.migrate``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, engine_from_config, pool

from velyrix.controlplane.db import models  # the package registers every area's tables on the metadata

target_metadata = models.Base.metadata
config = context.config


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:  # the ``alembic`` command line (autogenerate during development)
    eng = engine_from_config(
        config.get_section(config.config_ini_section, {}), prefix="sqlalchemy.", poolclass=pool.NullPool
    )
    with eng.connect() as conn:
        _run(conn)
