"""Tables the reconcilers own (migration ``0002``): network allocations, acceptance reports and the
per-cluster reconcile bookkeeping. They live on the control plane's declarative ``Base``."""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class NetworkAllocation(Base):
    """One tenant-network number in use: a VLAN id or an InfiniBand partition key of a live cluster.

    ``UNIQUE(region, kind, value)`` is the last line of defence: two replicas can never hand out the same
    number, even if their allocation locks failed.
    """

    __tablename__ = "network_allocations"
    __table_args__ = (sa.UniqueConstraint("region", "kind", "value", name="uq_network_allocations_value"),)
    id_prefix = "net"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    region: Mapped[str] = mapped_column(sa.String(63))
    kind: Mapped[str] = mapped_column(sa.String(16))
    """``vlan`` (802.1Q id), ``pkey`` (15-bit InfiniBand partition key) or ``vni`` (24-bit VXLAN id)."""
    value: Mapped[int] = mapped_column()
    tenant_id: Mapped[str] = mapped_column(sa.String(32), index=True)
    cluster_id: Mapped[str] = mapped_column(sa.ForeignKey("clusters.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class AcceptanceReport(Base):
    """The signed acceptance report of one delivery (a cluster may have several: scale-ups, replacements)."""

    __tablename__ = "acceptance_reports"
    id_prefix = "acc"
    tenancy = "tenant"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    cluster_id: Mapped[str] = mapped_column(sa.ForeignKey("clusters.id"), index=True)
    region: Mapped[str] = mapped_column(sa.String(63))
    passed: Mapped[bool] = mapped_column()
    report: Mapped[dict[str, Any]] = mapped_column()
    """The signed document: ``{"report": {...}, "signature": {...}}`` (see ``reconcile.signing``)."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class ClusterWork(Base):
    """Reconcile bookkeeping of one cluster: per-node progress, replacements, retries, the next wake-up.

    Per-node progress is one ``cluster_work_nodes`` row per node (``models.reconcile_work``, since migration
    ``0015``); steps go ``allocated`` -> ``provisioned`` -> ``networked`` -> ``storage`` -> ``accepted``.
    ``releasing`` counts those rows with a ``release`` set, so a settled cluster is checked without them.
    """

    __tablename__ = "cluster_work"
    id_prefix = "wrk"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    cluster_id: Mapped[str] = mapped_column(sa.ForeignKey("clusters.id"), unique=True)
    spec_digest: Mapped[str] = mapped_column(sa.String(64), default="")
    """SHA-256 of the spec last reconciled: a change (node_count, storage) restarts allocation."""
    generation: Mapped[int] = mapped_column(default=1)
    releasing: Mapped[int] = mapped_column(default=0)
    """Nodes of the cluster on their way out (``cluster_work_nodes.release`` set), kept by ``node_entry.store``."""
    settled_version: Mapped[int | None] = mapped_column()
    """The cluster row's ``version`` when a full check last found it settled: while it is unchanged, the next
    pass needs no more than ``reconcile.cluster.settled`` (no spec digest, no work row decoded)."""
    replacements: Mapped[list[Any]] = mapped_column(default=list)
    cluster_results: Mapped[list[Any]] = mapped_column(default=list)
    network: Mapped[dict[str, Any]] = mapped_column(default=dict)
    retries: Mapped[int] = mapped_column(default=0)
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    delete_volumes: Mapped[bool] = mapped_column(default=False)
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column()
    phase_started_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__: ClassVar[dict[str, Any]] = {"version_id_col": version}  # type: ignore[misc]
