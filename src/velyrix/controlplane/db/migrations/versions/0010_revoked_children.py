"""Keys revoked before revocation cascaded (docs/keys.md) left their children working: revoke, transitively,
every unrevoked key whose creator key is revoked. One recursive statement, the same on SQLite and
PostgreSQL; ``UNION`` (not ``UNION ALL``) ends on a cycle of ``created_by_key_id``. The children get the
time of the migration as ``revoked_at``. Downgrade restores nothing: which keys this revoked is not kept,
and a revoked key stays revoked.

Revision ID: 0010
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0008"
branch_labels = None
depends_on = None

_REVOKE_CHILDREN = sa.text(
    "UPDATE api_keys SET revoked_at = :now WHERE revoked_at IS NULL AND id IN ("
    " WITH RECURSIVE doomed(id) AS ("
    "  SELECT child.id FROM api_keys child JOIN api_keys parent ON child.created_by_key_id = parent.id"
    "  WHERE parent.revoked_at IS NOT NULL"
    "  UNION"
    "  SELECT child.id FROM api_keys child JOIN doomed ON child.created_by_key_id = doomed.id"
    " ) SELECT id FROM doomed)"
).bindparams(sa.bindparam("now", type_=sa.DateTime(timezone=True)))


def upgrade() -> None:
    bind = op.get_bind()
    now = dt.datetime.now(dt.UTC)
    if bind.dialect.name == "sqlite":  # SQLite stores naive UTC text (models/base.py UTCDateTime)
        now = now.replace(tzinfo=None)
    bind.execute(_REVOKE_CHILDREN, {"now": now})


def downgrade() -> None:
    pass
