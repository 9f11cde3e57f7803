"""GPU time per job from the node agents' reports: ``job_usage``.

Revision ID: 0029
Revises: 0025
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_usage",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=True),
        sa.Column("node_id", sa.String(length=32), nullable=False),
        sa.Column("hpc_job", sa.String(length=64), nullable=False),
        sa.Column("user", sa.String(length=64), nullable=False),
        sa.Column("team", sa.String(length=64), nullable=False),
        sa.Column("cost_center", sa.String(length=64), nullable=False),
        sa.Column("account", sa.String(length=64), nullable=False),
        sa.Column("allocated_gpu_s", sa.Float(), nullable=False),
        sa.Column("busy_gpu_s", sa.Float(), nullable=False),
        sa.Column("first_s", sa.Float(), nullable=False),
        sa.Column("last_s", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["node_id"], ["nodes.id"]),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("node_id", "tenant_id", "hpc_job"),
    )
    with op.batch_alter_table("job_usage", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_job_usage_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_job_usage_cluster_id"), ["cluster_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("job_usage", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_job_usage_cluster_id"))
        batch_op.drop_index(batch_op.f("ix_job_usage_tenant_id"))
    op.drop_table("job_usage")
