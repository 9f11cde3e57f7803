"""Hardening: on SQLite an ``INSERT OR REPLACE`` into audit_events replaced an existing event (REPLACE
deletes without firing DELETE triggers); a BEFORE INSERT trigger now refuses an insert whose id exists.
PostgreSQL needs nothing: ``INSERT ... ON CONFLICT DO UPDATE`` fires the UPDATE trigger of 0001.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "CREATE TRIGGER audit_events_no_replace BEFORE INSERT ON audit_events "
            "WHEN EXISTS (SELECT 1 FROM audit_events WHERE id = NEW.id) "
            "BEGIN SELECT RAISE(ABORT, 'audit_events is append-only: REPLACE refused'); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS audit_events_no_replace")
