"""Customer-managed keys: the tenants' key-encryption keys (where they live, no secret), their grants (the
credential sealed outside the database's reach) and each volume's data key wrapped by its tenant's key
(``velyrix.controlplane.db.models.keys``).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "customer_keys",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("provider", sa.String(length=16), nullable=False),
        sa.Column("locator", sa.JSON(), nullable=False),
        sa.Column("key_version", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rotated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("destroyed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "name", name="uq_customer_keys_tenant_name"),
    )
    op.create_index("ix_customer_keys_tenant_id", "customer_keys", ["tenant_id"])
    op.create_table(
        "customer_key_grants",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("sealed_credential", sa.LargeBinary(length=16384), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["key_id"], ["customer_keys.id"]),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_customer_key_grants_tenant_id", "customer_key_grants", ["tenant_id"])
    op.create_index("ix_customer_key_grants_key_id", "customer_key_grants", ["key_id"])
    op.create_table(
        "volume_data_keys",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("volume_id", sa.String(length=32), nullable=False),
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("key_version", sa.Integer(), nullable=False),
        sa.Column("wrapped", sa.LargeBinary(length=256), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rewrapped_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["key_id"], ["customer_keys.id"]),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("volume_id"),
    )
    op.create_index("ix_volume_data_keys_tenant_id", "volume_data_keys", ["tenant_id"])
    op.create_index("ix_volume_data_keys_key_id", "volume_data_keys", ["key_id"])


def downgrade() -> None:
    for index, table in (
        ("ix_volume_data_keys_key_id", "volume_data_keys"),
        ("ix_volume_data_keys_tenant_id", "volume_data_keys"),
        ("ix_customer_key_grants_key_id", "customer_key_grants"),
        ("ix_customer_key_grants_tenant_id", "customer_key_grants"),
        ("ix_customer_keys_tenant_id", "customer_keys"),
    ):
        op.drop_index(index, table_name=table)
    for table in ("volume_data_keys", "customer_key_grants", "customer_keys"):
        op.drop_table(table)
