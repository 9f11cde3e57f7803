"""Identity: API-key details (description, last use), users, browser sessions, identity providers (OIDC,
SAML), pending logins, seen SAML assertions, MFA credentials, tenant identity policies, SCIM groups.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "saml_seen_assertions",
        sa.Column("assertion_id", sa.String(length=200), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("assertion_id"),
    )
    op.create_table(
        "identity_providers",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("client_id", sa.String(length=200), nullable=False),
        sa.Column("client_secret", sa.String(length=500), nullable=False),
        sa.Column("saml_metadata", sa.Text(), nullable=False),
        sa.Column("allowed_domains", sa.JSON(), nullable=False),
        sa.Column("role_claim", sa.String(length=100), nullable=False),
        sa.Column("role_map", sa.JSON(), nullable=False),
        sa.Column("groups_claim", sa.String(length=100), nullable=False),
        sa.Column("group_map", sa.JSON(), nullable=False),
        sa.Column("default_role", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "name", name="uq_identity_providers_tenant_name"),
    )
    with op.batch_alter_table("identity_providers", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_identity_providers_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "scim_groups",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("display_name", sa.String(length=200), nullable=False),
        sa.Column("external_id", sa.String(length=200), nullable=True),
        sa.Column("members", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "display_name", name="uq_scim_groups_tenant_name"),
    )
    with op.batch_alter_table("scim_groups", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_scim_groups_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "tenant_identity_policies",
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("mfa_required", sa.Boolean(), nullable=False),
        sa.Column("totp_allowed", sa.Boolean(), nullable=False),
        sa.Column("idle_timeout_s", sa.Integer(), nullable=False),
        sa.Column("absolute_timeout_s", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("tenant_id"),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("user_name", sa.String(length=254), nullable=False),
        sa.Column("display_name", sa.String(length=200), nullable=False),
        sa.Column("external_id", sa.String(length=200), nullable=True),
        sa.Column("subject", sa.String(length=400), nullable=True),
        sa.Column("role", sa.String(length=32), nullable=False),
        sa.Column("groups", sa.JSON(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("scim", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "user_name", name="uq_users_tenant_user_name"),
    )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_users_subject"), ["subject"], unique=False)
        batch_op.create_index(batch_op.f("ix_users_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "api_key_details",
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("description", sa.String(length=500), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_address", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(
            ["key_id"],
            ["api_keys.id"],
        ),
        sa.PrimaryKeyConstraint("key_id"),
    )
    with op.batch_alter_table("api_key_details", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_key_details_user_id"), ["user_id"], unique=False)

    op.create_table(
        "login_flows",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("state_sha256", sa.String(length=64), nullable=False),
        sa.Column("provider_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("nonce", sa.String(length=200), nullable=False),
        sa.Column("code_verifier", sa.String(length=200), nullable=False),
        sa.Column("cli_redirect", sa.String(length=200), nullable=False),
        sa.Column("cli_challenge", sa.String(length=200), nullable=False),
        sa.Column("result", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["provider_id"],
            ["identity_providers.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("state_sha256"),
    )
    op.create_table(
        "mfa_credentials",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("credential_id", sa.String(length=1400), nullable=False),
        sa.Column("public_key", sa.Text(), nullable=False),
        sa.Column("sign_count", sa.Integer(), nullable=False),
        sa.Column("secret", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("mfa_credentials", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mfa_credentials_user_id"), ["user_id"], unique=False)

    op.create_table(
        "user_sessions",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("secret_sha256", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("method", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("mfa_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("end_reason", sa.String(length=32), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("secret_sha256"),
    )
    with op.batch_alter_table("user_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_user_sessions_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_user_sessions_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("user_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_user_sessions_user_id"))
        batch_op.drop_index(batch_op.f("ix_user_sessions_tenant_id"))

    op.drop_table("user_sessions")
    with op.batch_alter_table("mfa_credentials", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mfa_credentials_user_id"))

    op.drop_table("mfa_credentials")
    op.drop_table("login_flows")
    with op.batch_alter_table("api_key_details", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_key_details_user_id"))

    op.drop_table("api_key_details")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_users_subject"))

    op.drop_table("users")
    op.drop_table("tenant_identity_policies")
    with op.batch_alter_table("scim_groups", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_scim_groups_tenant_id"))

    op.drop_table("scim_groups")
    with op.batch_alter_table("identity_providers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_identity_providers_tenant_id"))

    op.drop_table("identity_providers")
    op.drop_table("saml_seen_assertions")
