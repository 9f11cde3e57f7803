"""One audit checkpoint per tree size between replicas: ``audit_checkpoints.sole`` and a partial unique index
on ``tree_size`` where it is true (``controlplane/audit/checkpoints.py``). Checkpoints stored before this
revision keep ``sole`` NULL (the table is append-only, and replicas may have signed a size twice), so the rule
holds from the next tree size on.

Revision ID: 0032
Revises: 0029
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0029"
branch_labels = None
depends_on = None

INDEX = "uq_audit_checkpoints_sole_tree_size"


def upgrade() -> None:
    # plain ALTER TABLE (no batch copy on SQLite): a copied table would lose its append-only triggers
    op.add_column("audit_checkpoints", sa.Column("sole", sa.Boolean(), nullable=True))
    op.create_index(
        INDEX,
        "audit_checkpoints",
        ["tree_size"],
        unique=True,
        postgresql_where=sa.text("sole"),
        sqlite_where=sa.text("sole"),
    )


def downgrade() -> None:
    op.drop_index(INDEX, table_name="audit_checkpoints")
    op.drop_column("audit_checkpoints", "sole")
