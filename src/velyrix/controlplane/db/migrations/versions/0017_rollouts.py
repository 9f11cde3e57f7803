"""Staged rollouts: rollouts and their step journal.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rollouts",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("region", sa.String(length=63), nullable=False),
        sa.Column("component", sa.String(length=63), nullable=False),
        sa.Column("version", sa.String(length=63), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("request_key", sa.String(length=128), nullable=True),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("announced_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("version_no", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("region", "name"),
        sa.UniqueConstraint("request_key"),
    )
    with op.batch_alter_table("rollouts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rollouts_region"), ["region"], unique=False)
        batch_op.create_index(batch_op.f("ix_rollouts_state"), ["state"], unique=False)
    op.create_table(
        "rollout_steps",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("rollout_id", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("node", sa.String(length=128), nullable=True),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["rollout_id"], ["rollouts.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("rollout_id", "key"),
    )
    with op.batch_alter_table("rollout_steps", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rollout_steps_rollout_id"), ["rollout_id"], unique=False)


def downgrade() -> None:
    op.drop_table("rollout_steps")
    op.drop_table("rollouts")
