"""The control-plane fixtures (app on SQLite and PostgreSQL, client, world of two tenants) for these tests."""

from tests.controlplane.conftest import app, client, db_url, every_mutation_audited_once, world

__all__ = ["app", "client", "db_url", "every_mutation_audited_once", "world"]
