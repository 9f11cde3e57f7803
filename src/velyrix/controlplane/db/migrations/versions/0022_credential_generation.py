"""The credential generation: one row that triggers move on at every change that can take rights away
from a credential (``db/models/credentials.py``), so that a cache of verified principals
(``identity/verified.py``) is checked by reading one number, on every replica of one database.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

WATCHED: tuple[tuple[str, str, str], ...] = (
    # (table, the events that bump, SQLite's form of them): the rows that authentication reads
    # (auth/principals.py _BY_DIGEST, identity/sessions.py _BY_SECRET). A session's last_seen_at
    # counts too (its idle timeout is computed from it), so each session moves the generation on once
    # a minute while it is used (identity/sessions.py TOUCH_INTERVAL_S).
    ("api_keys", "UPDATE OR DELETE", "UPDATE|DELETE"),
    ("user_sessions", "UPDATE OR DELETE", "UPDATE|DELETE"),
    (
        "users",
        "UPDATE OF user_name, role, active, tenant_id OR DELETE",
        "UPDATE OF user_name, role, active, tenant_id|DELETE",
    ),
    ("tenant_identity_policies", "INSERT OR UPDATE OR DELETE", "INSERT|UPDATE|DELETE"),
)
_BUMP = "UPDATE credential_generation SET generation = generation + 1 WHERE id = 1"
_PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION velyrix_bump_credential_generation() RETURNS trigger AS $$
BEGIN
    {_BUMP};
    RETURN NULL;
END;
$$ LANGUAGE plpgsql
"""


def upgrade() -> None:
    op.create_table(
        "credential_generation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute("INSERT INTO credential_generation (id, generation) VALUES (1, 0)")
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        for table, events, _ in WATCHED:
            op.execute(
                f"CREATE TRIGGER {table}_credential_generation AFTER {events} ON {table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION velyrix_bump_credential_generation()"
            )
    elif bind.dialect.name == "sqlite":
        for table, _, events in WATCHED:
            for n, event in enumerate(events.split("|")):
                op.execute(
                    f"CREATE TRIGGER {table}_credential_generation_{n} AFTER {event} ON {table} BEGIN {_BUMP}; END"
                )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for table, _, _ in WATCHED:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_credential_generation ON {table}")
        op.execute("DROP FUNCTION IF EXISTS velyrix_bump_credential_generation()")
    elif bind.dialect.name == "sqlite":
        for table, _, events in WATCHED:
            for n in range(len(events.split("|"))):
                op.execute(f"DROP TRIGGER IF EXISTS {table}_credential_generation_{n}")
    op.drop_table("credential_generation")
