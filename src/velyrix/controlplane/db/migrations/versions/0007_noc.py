"""NOC, SLA and billing: incident lifecycle and timeline, SLA contracts, maintenance windows, node and
volume allocation history, usage events, invoices, credit notes and closed billing months.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "billing_months",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_by", sa.String(length=200), nullable=False),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("month"),
    )
    op.create_table(
        "credit_notes",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("number", sa.String(length=32), nullable=False),
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=24), nullable=False),
        sa.Column("amount", sa.String(length=32), nullable=False),
        sa.Column("remaining", sa.String(length=32), nullable=False),
        sa.Column("applications", sa.JSON(), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("issued_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("number"),
    )
    with op.batch_alter_table("credit_notes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_credit_notes_month"), ["month"], unique=False)
        batch_op.create_index(batch_op.f("ix_credit_notes_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "invoices",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("number", sa.String(length=32), nullable=False),
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("lines", sa.JSON(), nullable=False),
        sa.Column("credits", sa.JSON(), nullable=False),
        sa.Column("subtotal", sa.String(length=32), nullable=False),
        sa.Column("credits_applied", sa.String(length=32), nullable=False),
        sa.Column("total", sa.String(length=32), nullable=False),
        sa.Column("issued_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("number"),
        sa.UniqueConstraint("tenant_id", "month", name="uq_invoices_tenant_month"),
    )
    with op.batch_alter_table("invoices", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_invoices_month"), ["month"], unique=False)
        batch_op.create_index(batch_op.f("ix_invoices_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "sla_contracts",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("terms", sa.JSON(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("set_by", sa.String(length=200), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id"),
    )
    op.create_table(
        "usage_events",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("source", sa.String(length=200), nullable=False),
        sa.Column("event_id", sa.String(length=64), nullable=False),
        sa.Column("type", sa.String(length=100), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("source", "event_id", name="uq_usage_events_source_id"),
    )
    with op.batch_alter_table("usage_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_usage_events_month"), ["month"], unique=False)
        batch_op.create_index(batch_op.f("ix_usage_events_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "volume_segments",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("volume_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=True),
        sa.Column("tier", sa.String(length=63), nullable=False),
        sa.Column("size_tb", sa.String(length=32), nullable=False),
        sa.Column("starts_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("volume_segments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_volume_segments_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_volume_segments_volume_id"), ["volume_id"], unique=False)

    op.create_table(
        "maintenance_windows",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=False),
        sa.Column("starts_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("announced_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("label", sa.String(length=200), nullable=False),
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
    with op.batch_alter_table("maintenance_windows", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_maintenance_windows_cluster_id"), ["cluster_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_maintenance_windows_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "incident_events",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("incident_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["incident_id"],
            ["incidents.id"],
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("incident_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_incident_events_incident_id"), ["incident_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_incident_events_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "incident_states",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("incident_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("number", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("acknowledged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("first_response_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_update_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("mitigated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("owner", sa.String(length=200), nullable=True),
        sa.Column("postmortem", sa.Text(), nullable=False),
        sa.Column("escalation_policy", sa.String(length=63), nullable=False),
        sa.Column("pages_sent", sa.Integer(), nullable=False),
        sa.Column("last_level", sa.Integer(), nullable=False),
        sa.Column("reescalated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["incident_id"],
            ["incidents.id"],
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("incident_id"),
    )
    with op.batch_alter_table("incident_states", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_incident_states_state"), ["state"], unique=False)
        batch_op.create_index(batch_op.f("ix_incident_states_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "node_allocations",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("node_id", sa.String(length=32), nullable=False),
        sa.Column("node_name", sa.String(length=128), nullable=False),
        sa.Column("node_type", sa.String(length=63), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=False),
        sa.Column("allocated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("released_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["node_id"],
            ["nodes.id"],
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("node_allocations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_node_allocations_cluster_id"), ["cluster_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_node_allocations_node_id"), ["node_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_node_allocations_tenant_id"), ["tenant_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("node_allocations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_node_allocations_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_node_allocations_node_id"))
        batch_op.drop_index(batch_op.f("ix_node_allocations_cluster_id"))

    op.drop_table("node_allocations")
    with op.batch_alter_table("incident_states", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_incident_states_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_incident_states_state"))

    op.drop_table("incident_states")
    with op.batch_alter_table("incident_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_incident_events_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_incident_events_incident_id"))

    op.drop_table("incident_events")
    with op.batch_alter_table("maintenance_windows", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_maintenance_windows_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_maintenance_windows_cluster_id"))

    op.drop_table("maintenance_windows")
    with op.batch_alter_table("volume_segments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_volume_segments_volume_id"))
        batch_op.drop_index(batch_op.f("ix_volume_segments_tenant_id"))

    op.drop_table("volume_segments")
    with op.batch_alter_table("usage_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_usage_events_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_usage_events_month"))

    op.drop_table("usage_events")
    op.drop_table("sla_contracts")
    with op.batch_alter_table("invoices", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_invoices_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_invoices_month"))

    op.drop_table("invoices")
    with op.batch_alter_table("credit_notes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_credit_notes_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_credit_notes_month"))

    op.drop_table("credit_notes")
    op.drop_table("billing_months")
