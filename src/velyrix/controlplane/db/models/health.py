"""Tables of node health on the control plane (migration ``0003``): per-node credentials of the agents,
each node's last report and verdict, RMA records and NOC incidents. They live on the control plane's
declarative ``Base`` (``models.base``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class NodeCredential(Base):
    """The bearer credential of one node's agent (``vlxn_...``). Only the SHA-256 of the token is stored;
    rotating issues a new one and revokes the previous ones."""

    __tablename__ = "node_credentials"
    id_prefix = "ncr"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    node_id: Mapped[str] = mapped_column(sa.ForeignKey("nodes.id"), index=True)
    prefix: Mapped[str] = mapped_column(sa.String(16))
    secret_sha256: Mapped[str] = mapped_column(sa.String(64), unique=True)
    created_by: Mapped[str] = mapped_column(sa.String(200))
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column()


class NodeReport(Base):
    """The last report of a node's agent and the health verdict it carried (one row per node).

    ``tenant_id`` is the node's tenant when the report arrived, so a tenant reads the reports of the nodes
    allocated to it and nothing else."""

    __tablename__ = "node_reports"
    id_prefix = "nrp"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    node_id: Mapped[str] = mapped_column(sa.ForeignKey("nodes.id"), unique=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    received_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    collected_at_s: Mapped[float] = mapped_column()
    """When the agent collected the sample (Unix s, or simulated s on the twin)."""
    up: Mapped[bool] = mapped_column()
    problems: Mapped[list[Any]] = mapped_column(default=list)
    sample: Mapped[dict[str, Any]] = mapped_column(default=dict)
    health_level: Mapped[int | None] = mapped_column()
    """0 ok .. 3 fatal (``velyrix.health.ladder.Level``)."""
    health_action: Mapped[str | None] = mapped_column(sa.String(32))
    """The ladder rung's name (``DRAIN_NOW``, ``QUARANTINE``, ``RMA`` ...)."""
    health_summary: Mapped[str] = mapped_column(sa.Text, default="")
    actions: Mapped[list[Any]] = mapped_column(default=list)
    """What the control plane did about this report (``quarantine <node>``, ``replace ...``)."""
    reports: Mapped[int] = mapped_column(default=0)
    """How many reports the node sent so far."""


class RmaRecord(Base):
    """A part to return to the vendor, with the evidence (provider-only: tenant_id is always NULL)."""

    __tablename__ = "rma_records"
    id_prefix = "rma"
    tenancy = "own"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.String(32))
    node_id: Mapped[str] = mapped_column(sa.ForeignKey("nodes.id"), index=True)
    node_name: Mapped[str] = mapped_column(sa.String(128))
    serial: Mapped[str | None] = mapped_column(sa.String(64))
    reasons: Mapped[list[Any]] = mapped_column(default=list)
    summary: Mapped[str] = mapped_column(sa.Text, default="")
    opened_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class Incident(Base):
    """A NOC incident (``velyrix.ops.noc``), e.g. a tenant's cluster that lost capacity with no spare left.
    ``key`` deduplicates: one open incident per cluster and cause. Tenants read their clusters' incidents."""

    __tablename__ = "incidents"
    id_prefix = "inc"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    number: Mapped[str] = mapped_column(sa.String(16), unique=True)
    """The NOC's display id, ``INC-00001``."""
    key: Mapped[str] = mapped_column(sa.String(200), index=True)
    priority: Mapped[str] = mapped_column(sa.String(4))
    title: Mapped[str] = mapped_column(sa.Text)
    tenant_id: Mapped[str | None] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    cluster_id: Mapped[str | None] = mapped_column(sa.ForeignKey("clusters.id"))
    nodes: Mapped[list[Any]] = mapped_column(default=list)
    detail: Mapped[str] = mapped_column(sa.Text, default="")
    opened_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    resolved_at: Mapped[dt.datetime | None] = mapped_column()
