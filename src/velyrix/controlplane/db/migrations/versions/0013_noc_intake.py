"""NOC intake and degraded capacity: PagerDuty Events v2 integrations (routing keys scoped to a tenant's
service) and the intervals in which an in-service node ran degraded.

Revision ID: 0013
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "event_integrations",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("cluster_id", sa.String(length=32), nullable=True),
        sa.Column("service", sa.String(length=200), nullable=False),
        sa.Column("key_sha256", sa.String(length=64), nullable=False),
        sa.Column("key_prefix", sa.String(length=8), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["cluster_id"], ["clusters.id"]),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key_sha256"),
    )
    with op.batch_alter_table("event_integrations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_event_integrations_tenant_id"), ["tenant_id"], unique=False)
    op.create_table(
        "node_degradations",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("node_id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["node_id"], ["nodes.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("node_degradations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_node_degradations_cluster_id"), ["cluster_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_node_degradations_node_id"), ["node_id"], unique=False)


def downgrade() -> None:
    op.drop_table("node_degradations")
    op.drop_table("event_integrations")
