"""Hardware MFA: WebAuthn challenges in flight (``mfa_challenges``), the step-up time of a browser
session and a tenant's step-up window (seconds).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mfa_challenges",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("challenge_sha256", sa.String(length=64), nullable=False),
        sa.Column("purpose", sa.String(length=16), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("session_id", sa.String(length=32), nullable=True),
        sa.Column("flow_id", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("challenge_sha256"),
    )
    with op.batch_alter_table("mfa_challenges", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mfa_challenges_user_id"), ["user_id"], unique=False)
    with op.batch_alter_table("user_sessions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("step_up_at", sa.DateTime(timezone=True), nullable=True))
    with op.batch_alter_table("tenant_identity_policies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("step_up_s", sa.Integer(), nullable=False, server_default="300"))


def downgrade() -> None:
    with op.batch_alter_table("tenant_identity_policies", schema=None) as batch_op:
        batch_op.drop_column("step_up_s")
    with op.batch_alter_table("user_sessions", schema=None) as batch_op:
        batch_op.drop_column("step_up_at")
    with op.batch_alter_table("mfa_challenges", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mfa_challenges_user_id"))
    op.drop_table("mfa_challenges")
