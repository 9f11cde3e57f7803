"""Tables of staged rollouts (migration ``0017``): the rollout (its spec, plan and state) and its step
journal, one row per step keyed ``(rollout_id, key)``: a step is recorded before it is acted on and marked
done after, so a controller that dies resumes from the journal (``velyrix.ops.rollouts``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class Rollout(Base):
    """A rollout declared with ``velyrix rollout apply``. ``state``: see ``velyrix.ops.rollouts.states``;
    ``request_key``: the client's idempotency key (a retried apply returns the same rollout)."""

    __tablename__ = "rollouts"
    __table_args__ = (sa.UniqueConstraint("region", "name"),)
    id_prefix = "rol"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(63))
    region: Mapped[str] = mapped_column(sa.String(63), index=True)
    component: Mapped[str] = mapped_column(sa.String(63))
    version: Mapped[str] = mapped_column(sa.String(63))
    spec: Mapped[dict[str, Any]] = mapped_column()
    plan: Mapped[dict[str, Any]] = mapped_column()
    state: Mapped[str] = mapped_column(sa.String(16), index=True)
    reason: Mapped[str] = mapped_column(sa.Text, default="")
    request_key: Mapped[str | None] = mapped_column(sa.String(128), unique=True)
    created_by: Mapped[str] = mapped_column(sa.String(200))
    announced_at: Mapped[dt.datetime] = mapped_column()
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    version_no: Mapped[int] = mapped_column(default=1)


class RolloutStep(Base):
    """One step of a rollout: ``key`` such as ``w3/upgrade/NODE`` (unique per rollout), ``status``
    ``started`` (recorded, maybe acted on) or ``done``; ``detail`` holds what the step found."""

    __tablename__ = "rollout_steps"
    __table_args__ = (sa.UniqueConstraint("rollout_id", "key"),)
    id_prefix = "rst"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    rollout_id: Mapped[str] = mapped_column(sa.ForeignKey("rollouts.id"), index=True)
    key: Mapped[str] = mapped_column(sa.String(255))
    node: Mapped[str | None] = mapped_column(sa.String(128))
    action: Mapped[str] = mapped_column(sa.String(32))
    status: Mapped[str] = mapped_column(sa.String(16))
    detail: Mapped[dict[str, Any]] = mapped_column(default=dict)
    started_at: Mapped[dt.datetime] = mapped_column()
    finished_at: Mapped[dt.datetime | None] = mapped_column()
