"""Reconcile leases between control-plane replicas: ``reconcile_leases`` (a holder and a fencing epoch per
shard of a region's clusters) and ``reconcile_replicas`` (each replica's heartbeat).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reconcile_leases",
        sa.Column("region", sa.String(length=64), nullable=False),
        sa.Column("shard", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("holder", sa.String(length=128), nullable=True),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("region", "shard"),
    )
    op.create_table(
        "reconcile_replicas",
        sa.Column("replica", sa.String(length=128), nullable=False),
        sa.Column("region", sa.String(length=64), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("replica"),
    )
    with op.batch_alter_table("reconcile_replicas", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_reconcile_replicas_region"), ["region"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("reconcile_replicas", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_reconcile_replicas_region"))
    op.drop_table("reconcile_replicas")
    op.drop_table("reconcile_leases")
