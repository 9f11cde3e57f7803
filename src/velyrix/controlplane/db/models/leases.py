"""Reconcile leases between control-plane replicas (migration ``0016``; ``velyrix.controlplane.reconcile.leases``).

- ``reconcile_leases``: one row per (region, shard); the replica holding it reconciles the region's clusters
  whose id hashes to that shard until ``expires_at`` (the database's clock). ``epoch`` grows by one at every
  change of holder: it is the fencing token a replica checks in each reconcile commit.
- ``reconcile_replicas``: each live replica's heartbeat (``expires_at``), so that replicas know how many
  share the shards.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class ReconcileLease(Base):
    """One shard of a region's clusters and the replica that holds it (``holder`` None: free)."""

    __tablename__ = "reconcile_leases"
    tenancy = "global"

    region: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    shard: Mapped[int] = mapped_column(sa.Integer, primary_key=True, autoincrement=False)
    holder: Mapped[str | None] = mapped_column(sa.String(128))
    epoch: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    expires_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class ReconcileReplica(Base):
    """A replica's heartbeat: alive while ``expires_at`` is ahead of the database's clock."""

    __tablename__ = "reconcile_replicas"
    tenancy = "global"

    replica: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    region: Mapped[str] = mapped_column(sa.String(64), index=True)
    started_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
