"""Tables of the NOC's second intake and of degraded capacity (migration ``0013``): PagerDuty Events v2
integrations (routing keys scoped to a tenant's service) and the intervals in which an in-service node ran
on a health verdict of level ``degraded`` (read by the SLA when a contract counts degraded GPUs as down)."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class EventIntegration(Base):
    """A PagerDuty Events v2 integration: a 32-character routing key (only its SHA-256 is stored) that
    opens incidents for one service of one tenant (``tenant_id`` NULL: the provider's own service;
    ``cluster_id`` set: incidents on that cluster). Created by the provider's NOC
    (``POST /v1/event-integrations``)."""

    __tablename__ = "event_integrations"
    id_prefix = "evi"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    cluster_id: Mapped[str | None] = mapped_column(sa.ForeignKey("clusters.id"))
    service: Mapped[str] = mapped_column(sa.String(200))
    key_sha256: Mapped[str] = mapped_column(sa.String(64), unique=True)
    key_prefix: Mapped[str] = mapped_column(sa.String(8))
    created_by: Mapped[str] = mapped_column(sa.String(200))
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column()


class NodeDegradation(Base):
    """One interval in which a node delivered to a cluster (provisioning ``active``, stage ``production``)
    carried a health verdict of level ``degraded`` or worse that kept it in service: from the first such
    report to the first report below it, or to the node leaving service (``ended_at`` NULL while it lasts). Written by
    ``velyrix.ops.remediation.degradation`` on the fleet's clock."""

    __tablename__ = "node_degradations"
    id_prefix = "ndg"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    node_id: Mapped[str] = mapped_column(sa.ForeignKey("nodes.id"), index=True)
    cluster_id: Mapped[str | None] = mapped_column(sa.String(32), index=True)
    started_at: Mapped[dt.datetime] = mapped_column()
    ended_at: Mapped[dt.datetime | None] = mapped_column()
    reason: Mapped[str] = mapped_column(sa.Text, default="")
