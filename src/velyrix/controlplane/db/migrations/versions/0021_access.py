"""Access to tenants' nodes: per-tenant SSH CAs (``ssh_authorities``), users' SSH public keys
(``ssh_user_keys``), tenants' approvals of provider actions (``access_approvals``) and clusters'
connectivity objects (``connectivity_objects``).

Revision ID: 0021
Revises: 0019
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0019"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "ssh_authorities",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("public_key", sa.String(length=400), nullable=False),
        sa.Column("private_key_pem", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id"),
    )
    op.create_table(
        "ssh_user_keys",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("public_key", sa.String(length=16384), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("user_id", "fingerprint", name="uq_ssh_user_keys_user_fingerprint"),
    )
    with op.batch_alter_table("ssh_user_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ssh_user_keys_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_ssh_user_keys_user_id"), ["user_id"], unique=False)
    op.create_table(
        "access_approvals",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("approved_by", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("expires_at", _TS, nullable=False),
        sa.Column("used_at", _TS, nullable=True),
        sa.Column("used_by", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("access_approvals", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_access_approvals_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_access_approvals_cluster_id"), ["cluster_id"], unique=False)
    op.create_table(
        "connectivity_objects",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=False),
        sa.Column("address", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.ForeignKeyConstraint(["cluster_id"], ["clusters.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("cluster_id", "address", name="uq_connectivity_cluster_address"),
    )
    with op.batch_alter_table("connectivity_objects", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_connectivity_objects_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_connectivity_objects_cluster_id"), ["cluster_id"], unique=False)


def downgrade() -> None:
    for table, columns in (
        ("connectivity_objects", ("cluster_id", "tenant_id")),
        ("access_approvals", ("cluster_id", "tenant_id")),
        ("ssh_user_keys", ("user_id", "tenant_id")),
    ):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column in columns:
                batch_op.drop_index(batch_op.f(f"ix_{table}_{column}"))
        op.drop_table(table)
    op.drop_table("ssh_authorities")
