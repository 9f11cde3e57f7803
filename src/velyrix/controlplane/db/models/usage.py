"""GPU time per job, metered from the node agents' reports (migration ``0029``;
``velyrix.controlplane.job_usage``): one row per (node, job) with the GPU-seconds the job held and the
GPU-seconds its GPUs were busy, and the job's attribution (user, team, cost center, account)."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class JobUsage(Base):
    """A job's GPU time on one node: ``allocated_gpu_s`` (its GPUs x the report intervals it was mapped in,
    seconds of the agent's sample clock: the twin's on a twin) and ``busy_gpu_s`` (the same weighted by each
    GPU's utilization, 0..1); ``first_s``/``last_s``: the first and last report intervals that counted it."""

    __tablename__ = "job_usage"
    __table_args__ = (sa.UniqueConstraint("node_id", "tenant_id", "hpc_job"),)
    id_prefix = "jbu"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    cluster_id: Mapped[str | None] = mapped_column(sa.String(32), index=True)
    node_id: Mapped[str] = mapped_column(sa.ForeignKey("nodes.id"))
    hpc_job: Mapped[str] = mapped_column(sa.String(64))
    user: Mapped[str] = mapped_column(sa.String(64), default="")
    team: Mapped[str] = mapped_column(sa.String(64), default="")
    cost_center: Mapped[str] = mapped_column(sa.String(64), default="")
    account: Mapped[str] = mapped_column(sa.String(64), default="")
    allocated_gpu_s: Mapped[float] = mapped_column(default=0.0)
    busy_gpu_s: Mapped[float] = mapped_column(default=0.0)
    first_s: Mapped[float] = mapped_column(default=0.0)
    last_s: Mapped[float] = mapped_column(default=0.0)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
