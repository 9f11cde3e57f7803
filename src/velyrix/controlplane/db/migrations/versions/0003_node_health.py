"""Node health on the control plane: agents' credentials, last reports and verdicts, RMA records, NOC
incidents; new nodes start in fleet stage ``burn-in`` (``incoming`` was never a stage).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "node_credentials",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("node_id", sa.String(length=32), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["node_id"],
            ["nodes.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("secret_sha256"),
    )
    with op.batch_alter_table("node_credentials", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_node_credentials_node_id"), ["node_id"], unique=False)

    op.create_table(
        "node_reports",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("node_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("collected_at_s", sa.Float(), nullable=False),
        sa.Column("up", sa.Boolean(), nullable=False),
        sa.Column("problems", sa.JSON(), nullable=False),
        sa.Column("sample", sa.JSON(), nullable=False),
        sa.Column("health_level", sa.Integer(), nullable=True),
        sa.Column("health_action", sa.String(length=32), nullable=True),
        sa.Column("health_summary", sa.Text(), nullable=False),
        sa.Column("actions", sa.JSON(), nullable=False),
        sa.Column("reports", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["node_id"],
            ["nodes.id"],
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("node_id"),
    )
    with op.batch_alter_table("node_reports", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_node_reports_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "rma_records",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("node_id", sa.String(length=32), nullable=False),
        sa.Column("node_name", sa.String(length=128), nullable=False),
        sa.Column("serial", sa.String(length=64), nullable=True),
        sa.Column("reasons", sa.JSON(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["node_id"],
            ["nodes.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("rma_records", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_rma_records_node_id"), ["node_id"], unique=False)

    op.create_table(
        "incidents",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("number", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("priority", sa.String(length=4), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("cluster_id", sa.String(length=32), nullable=True),
        sa.Column("nodes", sa.JSON(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["cluster_id"],
            ["clusters.id"],
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("number"),
    )
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_incidents_key"), ["key"], unique=False)
        batch_op.create_index(batch_op.f("ix_incidents_tenant_id"), ["tenant_id"], unique=False)

    # 'incoming' was the model's default but never a stage of the lifecycle table: such nodes were
    # never picked up by intake. They start their burn-in now.
    op.execute("UPDATE nodes SET fleet_stage = 'burn-in' WHERE fleet_stage = 'incoming'")


def downgrade() -> None:
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_incidents_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_incidents_key"))
    op.drop_table("incidents")
    with op.batch_alter_table("rma_records", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_rma_records_node_id"))
    op.drop_table("rma_records")
    with op.batch_alter_table("node_reports", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_node_reports_tenant_id"))
    op.drop_table("node_reports")
    with op.batch_alter_table("node_credentials", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_node_credentials_node_id"))
    op.drop_table("node_credentials")
