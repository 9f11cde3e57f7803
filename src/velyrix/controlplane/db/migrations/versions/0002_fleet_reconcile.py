"""Reconciler tables: network allocations (unique VLAN / partition key per region), acceptance reports,
per-cluster reconcile work.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "network_allocations",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("region", sa.String(length=63), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["clusters.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("region", "kind", "value", name="uq_network_allocations_value"),
    )
    with op.batch_alter_table("network_allocations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_network_allocations_cluster_id"), ["cluster_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_network_allocations_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "acceptance_reports",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=False),
        sa.Column("region", sa.String(length=63), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["clusters.id"],
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("acceptance_reports", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_acceptance_reports_cluster_id"), ["cluster_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_acceptance_reports_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "cluster_work",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=False),
        sa.Column("spec_digest", sa.String(length=64), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("nodes", sa.JSON(), nullable=False),
        sa.Column("replacements", sa.JSON(), nullable=False),
        sa.Column("cluster_results", sa.JSON(), nullable=False),
        sa.Column("network", sa.JSON(), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delete_volumes", sa.Boolean(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("phase_started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["clusters.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("cluster_id"),
    )


def downgrade() -> None:
    op.drop_table("cluster_work")
    with op.batch_alter_table("acceptance_reports", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_acceptance_reports_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_acceptance_reports_cluster_id"))
    op.drop_table("acceptance_reports")
    with op.batch_alter_table("network_allocations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_network_allocations_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_network_allocations_cluster_id"))
    op.drop_table("network_allocations")
