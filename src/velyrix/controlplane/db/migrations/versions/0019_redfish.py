"""BMC endpoints of the Redfish driver, passwords sealed (``bmc_credentials``).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "bmc_credentials",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("node_name", sa.String(length=128), nullable=False),
        sa.Column("region", sa.String(length=64), nullable=False),
        sa.Column("address", sa.String(length=512), nullable=False),
        sa.Column("system_id", sa.String(length=256), nullable=False),
        sa.Column("username", sa.String(length=128), nullable=False),
        sa.Column("sealed_password", sa.LargeBinary(), nullable=False),
        sa.Column("verify_tls", sa.Boolean(), nullable=False),
        sa.Column("node_type", sa.String(length=64), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("node_name"),
    )
    with op.batch_alter_table("bmc_credentials", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_bmc_credentials_region"), ["region"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("bmc_credentials", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_bmc_credentials_region"))
    op.drop_table("bmc_credentials")
