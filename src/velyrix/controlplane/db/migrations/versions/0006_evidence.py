"""Evidence: the audit log's Merkle tree (head; leaves with the inner nodes they complete), its signed
checkpoints, and signed sanitization certificates (NIST SP 800-88). The leaf, checkpoint and certificate
tables are append-only by trigger; the head's tree size may only grow. Audit events written before this
revision become the first leaves, in id (creation) order.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

APPEND_ONLY = ("audit_leaves", "audit_checkpoints", "sanitization_certificates")

_PG_APPEND_ONLY = """
CREATE OR REPLACE FUNCTION velyrix_evidence_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql
"""
_PG_HEAD_GROWS = """
CREATE OR REPLACE FUNCTION velyrix_audit_log_head_grows() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' OR NEW.tree_size < OLD.tree_size THEN
        RAISE EXCEPTION 'audit_log_head only grows: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql
"""


def upgrade() -> None:
    op.create_table(
        "audit_log_head",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("tree_size", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "audit_leaves",
        sa.Column("idx", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("event_id", sa.String(length=32), nullable=False),
        sa.Column("leaf_hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("parents", sa.LargeBinary(length=2048), nullable=False),
        sa.PrimaryKeyConstraint("idx"),
        sa.UniqueConstraint("event_id"),
    )
    op.create_table(
        "audit_checkpoints",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tree_size", sa.BigInteger(), nullable=False),
        sa.Column("root_hash", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("audit_checkpoints", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_checkpoints_tree_size"), ["tree_size"], unique=False)
    op.create_table(
        "sanitization_certificates",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("cluster_id", sa.String(length=32), nullable=False),
        sa.Column("subject_kind", sa.String(length=16), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("sanitization_certificates", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sanitization_certificates_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sanitization_certificates_cluster_id"), ["cluster_id"], unique=False)
    _backfill()
    _triggers()


def _backfill() -> None:
    from velyrix.controlplane.audit import log

    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT * FROM audit_events ORDER BY id")).mappings().all()
    leaves = log.tree_rows([log.canonical_row(dict(r), i) for i, r in enumerate(rows)], [r["id"] for r in rows])
    op.bulk_insert(
        sa.table("audit_log_head", sa.column("id"), sa.column("tree_size")), [{"id": 1, "tree_size": len(rows)}]
    )
    if leaves:
        columns: list[sa.ColumnClause[object]] = [sa.column(c) for c in ("idx", "event_id", "leaf_hash", "parents")]
        op.bulk_insert(sa.table("audit_leaves", *columns), leaves)


def _triggers() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute(_PG_APPEND_ONLY)
        op.execute(_PG_HEAD_GROWS)
        for table in APPEND_ONLY:
            op.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON {table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION velyrix_evidence_append_only()"
            )
        op.execute(
            "CREATE TRIGGER audit_log_head_grows BEFORE UPDATE OR DELETE ON audit_log_head "
            "FOR EACH ROW EXECUTE FUNCTION velyrix_audit_log_head_grows()"
        )
    elif bind.dialect.name == "sqlite":
        for table in APPEND_ONLY:
            for verb in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{verb.lower()} BEFORE {verb} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{table} is append-only: {verb} refused'); END"
                )
        op.execute(
            "CREATE TRIGGER audit_log_head_grows BEFORE UPDATE ON audit_log_head WHEN NEW.tree_size < OLD.tree_size "
            "BEGIN SELECT RAISE(ABORT, 'audit_log_head only grows: UPDATE refused'); END"
        )
        op.execute(
            "CREATE TRIGGER audit_log_head_no_delete BEFORE DELETE ON audit_log_head "
            "BEGIN SELECT RAISE(ABORT, 'audit_log_head only grows: DELETE refused'); END"
        )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for table in APPEND_ONLY:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
        op.execute("DROP TRIGGER IF EXISTS audit_log_head_grows ON audit_log_head")
        op.execute("DROP FUNCTION IF EXISTS velyrix_evidence_append_only()")
        op.execute("DROP FUNCTION IF EXISTS velyrix_audit_log_head_grows()")
    with op.batch_alter_table("audit_checkpoints", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_checkpoints_tree_size"))
    for table in ("sanitization_certificates", "audit_checkpoints", "audit_leaves", "audit_log_head"):
        op.drop_table(table)
