"""The scheduler delivered with a cluster (migration ``0018``): one row per cluster whose ``scheduler`` a
delivery service handled (``velyrix.controlplane.reconcile.scheduler``), with what a tenant needs to use it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class SchedulerDelivery(Base):
    """What was delivered for a cluster's declared ``scheduler``: ``kind`` (``slurm``, ``kubernetes``),
    ``state`` (``delivering``, ``ready``, ``artifacts``, ``failed``, ``removed``), the environment that points
    the scheduler's tools at it (``SLURM_CONF`` ...), the node names it schedules on, and delivered
    artifacts (file name → text: Kueue and GPU manifests). Written by the reconcilers only."""

    __tablename__ = "scheduler_deliveries"
    id_prefix = "sch"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    cluster_id: Mapped[str] = mapped_column(sa.ForeignKey("clusters.id"), unique=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    kind: Mapped[str] = mapped_column(sa.String(16))
    state: Mapped[str] = mapped_column(sa.String(16))
    message: Mapped[str] = mapped_column(sa.Text, default="")
    env: Mapped[dict[str, Any]] = mapped_column(default=dict)
    nodes: Mapped[list[Any]] = mapped_column(default=list)
    artifacts: Mapped[dict[str, Any]] = mapped_column(default=dict)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
