"""Tables of the evidence area (migration ``0006``): the audit log's Merkle tree (its head, and leaves
with the inner nodes they complete) and its signed checkpoints. Every table is append-only by trigger except the head,
whose tree size may only grow (``velyrix.controlplane.audit.log`` explains the layout)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class AuditLogHead(Base):
    """One row (``id`` 1): the number of leaves in the audit log. Appending takes its row lock, so leaf
    indexes are dense and in commit order on every backend."""

    __tablename__ = "audit_log_head"
    tenancy = "global"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    tree_size: Mapped[int] = mapped_column(sa.BigInteger)


class AuditLeaf(Base):
    """Leaf ``idx`` of the audit log: the event it commits to, ``SHA-256(0x00 || canonical event)``, and the
    inner nodes this leaf completes (levels 1..k, 32 bytes each; ``audit.log.holder``)."""

    __tablename__ = "audit_leaves"
    tenancy = "global"

    idx: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    event_id: Mapped[str] = mapped_column(sa.String(32), unique=True)
    leaf_hash: Mapped[bytes] = mapped_column(sa.LargeBinary(32))
    parents: Mapped[bytes] = mapped_column(sa.LargeBinary(2048), default=b"")


class AuditCheckpoint(Base):
    """A signed statement of the log's size and root hash at a time (``document`` as published)."""

    __tablename__ = "audit_checkpoints"
    __table_args__ = (
        sa.Index(
            "uq_audit_checkpoints_sole_tree_size",
            "tree_size",
            unique=True,
            postgresql_where=sa.text("sole"),
            sqlite_where=sa.text("sole"),
        ),
    )
    id_prefix = "ack"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tree_size: Mapped[int] = mapped_column(sa.BigInteger, index=True)
    root_hash: Mapped[str] = mapped_column(sa.String(64))
    at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    document: Mapped[dict[str, Any]] = mapped_column()
    sole: Mapped[bool | None] = mapped_column(default=None)
    """True on the checkpoint of its tree size published without ``force``: one per size (a partial unique
    index, migration 0032). None on a forced re-signing, and on checkpoints stored before 0032."""


class SanitizationCertificate(Base):
    """A signed NIST SP 800-88 certificate of one node's or volume's sanitization on release
    (``velyrix.controlplane.evidence.sanitization``); the tenant whose data it held can read it."""

    __tablename__ = "sanitization_certificates"
    id_prefix = "san"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.String(32), index=True)
    cluster_id: Mapped[str] = mapped_column(sa.String(32), index=True)
    subject_kind: Mapped[str] = mapped_column(sa.String(16))
    """``node`` or ``volume``."""
    subject: Mapped[str] = mapped_column(sa.String(200))
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    document: Mapped[dict[str, Any]] = mapped_column()
