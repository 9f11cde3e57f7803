"""The running cloud: the control plane's evidence history of each node and each node's health events.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "node_evidence",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("node_id", sa.String(length=32), nullable=False),
        sa.Column("node_type", sa.String(length=63), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=True),
        sa.Column("last_t_s", sa.Float(), nullable=False),
        sa.Column("samples", sa.JSON(), nullable=False),
        sa.Column("xids", sa.JSON(), nullable=False),
        sa.Column("repairs", sa.JSON(), nullable=False),
        sa.Column("peer_metrics", sa.JSON(), nullable=False),
        sa.Column("held_action", sa.String(length=32), nullable=True),
        sa.Column("server_action", sa.String(length=32), nullable=True),
        sa.Column("verdict", sa.JSON(), nullable=False),
        sa.Column("agent_verdict", sa.JSON(), nullable=True),
        sa.Column("pending_ops", sa.JSON(), nullable=False),
        sa.Column("disagreements", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["node_id"], ["nodes.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("node_id"),
    )
    with op.batch_alter_table("node_evidence", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_node_evidence_cluster_id"), ["cluster_id"], unique=False)
    op.create_table(
        "node_events",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("node_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("t_s", sa.Float(), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("agent_action", sa.String(length=32), nullable=True),
        sa.Column("server_action", sa.String(length=32), nullable=True),
        sa.ForeignKeyConstraint(["node_id"], ["nodes.id"]),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("node_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_node_events_node_id"), ["node_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_node_events_tenant_id"), ["tenant_id"], unique=False)


def downgrade() -> None:
    op.drop_table("node_events")
    op.drop_table("node_evidence")
