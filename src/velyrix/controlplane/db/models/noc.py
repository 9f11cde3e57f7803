"""Tables of the NOC, SLA and billing (migration ``0007``): incident lifecycle and timeline, SLA contracts,
maintenance windows, the allocation history of nodes and volumes that metering reads, usage events,
invoices, credit notes and closed billing months. Money columns hold exact decimal strings (USD)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow
from velyrix.controlplane.db.models.resources import Volume
from velyrix.fleet import clock


class IncidentState(Base):
    """The lifecycle of one ``incidents`` row (``velyrix.ops.noc.lifecycle``): state, timers, escalation."""

    __tablename__ = "incident_states"
    id_prefix = "ist"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    incident_id: Mapped[str] = mapped_column(sa.ForeignKey("incidents.id"), unique=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    number: Mapped[str] = mapped_column(sa.String(16))
    state: Mapped[str] = mapped_column(sa.String(16), default="open", index=True)
    source: Mapped[str] = mapped_column(sa.String(32), default="control-plane")
    """``control-plane``, ``alertmanager`` or ``pagerduty``."""
    opened_at: Mapped[dt.datetime] = mapped_column(default=clock.now)
    acknowledged_at: Mapped[dt.datetime | None] = mapped_column()
    first_response_at: Mapped[dt.datetime | None] = mapped_column()
    last_update_at: Mapped[dt.datetime | None] = mapped_column()
    mitigated_at: Mapped[dt.datetime | None] = mapped_column()
    resolved_at: Mapped[dt.datetime | None] = mapped_column()
    owner: Mapped[str | None] = mapped_column(sa.String(200))
    postmortem: Mapped[str] = mapped_column(sa.Text, default="")
    escalation_policy: Mapped[str] = mapped_column(sa.String(63), default="default")
    pages_sent: Mapped[int] = mapped_column(default=0)
    last_level: Mapped[int] = mapped_column(default=-1)
    reescalated_at: Mapped[dt.datetime | None] = mapped_column()
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__ = {"version_id_col": version}


class IncidentEvent(Base):
    """One line of an incident's timeline: opened, page, state, note."""

    __tablename__ = "incident_events"
    id_prefix = "iev"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    incident_id: Mapped[str] = mapped_column(sa.ForeignKey("incidents.id"), index=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    at: Mapped[dt.datetime] = mapped_column(default=clock.now)
    kind: Mapped[str] = mapped_column(sa.String(16))
    actor: Mapped[str] = mapped_column(sa.String(200))
    text: Mapped[str] = mapped_column(sa.Text, default="")
    detail: Mapped[dict[str, Any]] = mapped_column(default=dict)


class SlaContract(Base):
    """A tenant's own SLA contract (tenants without one have the catalog's default)."""

    __tablename__ = "sla_contracts"
    id_prefix = "slc"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), unique=True)
    name: Mapped[str] = mapped_column(sa.String(63))
    terms: Mapped[dict[str, Any]] = mapped_column()
    """``velyrix.ops.sla.contracts.Contract.to_dict()``."""
    source: Mapped[str] = mapped_column(sa.Text, default="")
    set_by: Mapped[str] = mapped_column(sa.String(200))
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__ = {"version_id_col": version}


class MaintenanceWindow(Base):
    """A maintenance window of a cluster, announced (or not) ahead of its start."""

    __tablename__ = "maintenance_windows"
    id_prefix = "mnt"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    cluster_id: Mapped[str] = mapped_column(sa.ForeignKey("clusters.id"), index=True)
    starts_at: Mapped[dt.datetime] = mapped_column()
    ends_at: Mapped[dt.datetime] = mapped_column()
    announced_at: Mapped[dt.datetime | None] = mapped_column()
    label: Mapped[str] = mapped_column(sa.String(200), default="")


class NodeAllocation(Base):
    """State history for metering: a node held by a tenant's cluster from ``allocated_at`` to
    ``released_at`` (written by ``reconcile.store.DbTransitionStore`` with the transitions)."""

    __tablename__ = "node_allocations"
    id_prefix = "nal"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    node_id: Mapped[str] = mapped_column(sa.ForeignKey("nodes.id"), index=True)
    node_name: Mapped[str] = mapped_column(sa.String(128))
    node_type: Mapped[str] = mapped_column(sa.String(63))
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    cluster_id: Mapped[str] = mapped_column(sa.String(32), index=True)
    allocated_at: Mapped[dt.datetime] = mapped_column()
    released_at: Mapped[dt.datetime | None] = mapped_column()


class VolumeSegment(Base):
    """State history for metering: a volume at one size from ``starts_at`` to ``ends_at``."""

    __tablename__ = "volume_segments"
    id_prefix = "vsg"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    volume_id: Mapped[str] = mapped_column(sa.String(32), index=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    cluster_id: Mapped[str | None] = mapped_column(sa.String(32))
    tier: Mapped[str] = mapped_column(sa.String(63))
    size_tb: Mapped[str] = mapped_column(sa.String(32))
    starts_at: Mapped[dt.datetime] = mapped_column()
    ends_at: Mapped[dt.datetime | None] = mapped_column()


class UsageEvent(Base):
    """A usage event (CloudEvents 1.0 attributes + data); one per (source, event_id): ingestion is
    idempotent."""

    __tablename__ = "usage_events"
    __table_args__ = (sa.UniqueConstraint("source", "event_id", name="uq_usage_events_source_id"),)
    id_prefix = "use"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    source: Mapped[str] = mapped_column(sa.String(200))
    event_id: Mapped[str] = mapped_column(sa.String(64))
    type: Mapped[str] = mapped_column(sa.String(100))
    subject: Mapped[str] = mapped_column(sa.String(200))
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    month: Mapped[str] = mapped_column(sa.String(7), index=True)
    time: Mapped[dt.datetime] = mapped_column()
    data: Mapped[dict[str, Any]] = mapped_column()


class Invoice(Base):
    """A tenant's monthly invoice: lines (JSON), subtotal, credits applied, total (decimal strings)."""

    __tablename__ = "invoices"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "month", name="uq_invoices_tenant_month"),)
    id_prefix = "inv"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    number: Mapped[str] = mapped_column(sa.String(32), unique=True)
    month: Mapped[str] = mapped_column(sa.String(7), index=True)
    state: Mapped[str] = mapped_column(sa.String(16), default="issued")
    currency: Mapped[str] = mapped_column(sa.String(3), default="USD")
    lines: Mapped[list[Any]] = mapped_column(default=list)
    credits: Mapped[list[Any]] = mapped_column(default=list)
    """[{credit_note_id, number, amount_usd}] applied to this invoice."""
    subtotal: Mapped[str] = mapped_column(sa.String(32))
    credits_applied: Mapped[str] = mapped_column(sa.String(32))
    total: Mapped[str] = mapped_column(sa.String(32))
    issued_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class CreditNote(Base):
    """An SLA credit for a missed target, with its evidence; applied to the next invoices until spent."""

    __tablename__ = "credit_notes"
    id_prefix = "crn"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    number: Mapped[str] = mapped_column(sa.String(32), unique=True)
    month: Mapped[str] = mapped_column(sa.String(7), index=True)
    cluster_id: Mapped[str] = mapped_column(sa.String(32))
    state: Mapped[str] = mapped_column(sa.String(24), default="issued")
    """``issued`` -> ``partially_applied`` -> ``applied``."""
    amount: Mapped[str] = mapped_column(sa.String(32))
    remaining: Mapped[str] = mapped_column(sa.String(32))
    applications: Mapped[list[Any]] = mapped_column(default=list)
    evidence: Mapped[dict[str, Any]] = mapped_column(default=dict)
    issued_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class BillingMonth(Base):
    """A closed month: invoices and credit notes issued (closing twice is refused)."""

    __tablename__ = "billing_months"
    id_prefix = "bmo"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    month: Mapped[str] = mapped_column(sa.String(7), unique=True)
    closed_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    closed_by: Mapped[str] = mapped_column(sa.String(200))
    summary: Mapped[dict[str, Any]] = mapped_column(default=dict)


def _open_segments(session: orm.Session, volume_id: str) -> list[VolumeSegment]:
    with session.no_autoflush:
        found = session.scalars(
            sa.select(VolumeSegment).where(VolumeSegment.volume_id == volume_id, VolumeSegment.ends_at.is_(None))
        )
        pending = [o for o in session.new if isinstance(o, VolumeSegment) and o.volume_id == volume_id]
        return [*found, *(p for p in pending if p.ends_at is None)]


def _segment(volume: Volume, at: dt.datetime) -> VolumeSegment:
    return VolumeSegment(
        volume_id=volume.id,
        tenant_id=volume.tenant_id,
        cluster_id=volume.cluster_id,
        tier=volume.tier,
        size_tb=str(volume.size_tb),
        starts_at=at,
    )


@sa.event.listens_for(orm.Session, "before_flush")
def _volume_history(session: orm.Session, _context: Any, _instances: Any) -> None:
    """Metering's state history of volumes, whoever changes them (routes, reconcilers): a segment opens
    when a volume is created, closes and reopens when its size changes, closes when it is deleted."""
    now = utcnow()
    for obj in list(session.new):
        if isinstance(obj, Volume):
            session.add(_segment(obj, now))
    for obj in list(session.dirty):
        if isinstance(obj, Volume) and sa.inspect(obj).attrs.size_tb.history.has_changes():
            for seg in _open_segments(session, obj.id):
                seg.ends_at = now
            session.add(_segment(obj, now))
    for obj in list(session.deleted):
        if isinstance(obj, Volume):
            for seg in _open_segments(session, obj.id):
                seg.ends_at = now
