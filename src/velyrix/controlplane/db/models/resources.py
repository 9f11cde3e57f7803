"""Tables of the API's resources: tenants, API keys, clusters, nodes (and their transitions), volumes,
audit events and idempotency records. See ``base`` for ids, tenancy and optimistic locking."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class Tenant(Base):
    """A customer organisation; every tenant-owned row points to one."""

    __tablename__ = "tenants"
    id_prefix = "ten"
    tenancy = "self"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(63), unique=True)
    display_name: Mapped[str] = mapped_column(sa.String(200), default="")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__ = {"version_id_col": version}


class ApiKey(Base):
    """A bearer API key. Only the SHA-256 of the secret is stored; ``prefix`` is shown to identify it."""

    __tablename__ = "api_keys"
    id_prefix = "key"
    tenancy = "own"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    """NULL for provider keys (roles operator and auditor)."""
    name: Mapped[str] = mapped_column(sa.String(200))
    role: Mapped[str] = mapped_column(sa.String(32))
    scopes: Mapped[list[Any]] = mapped_column()
    prefix: Mapped[str] = mapped_column(sa.String(16))
    secret_sha256: Mapped[str] = mapped_column(sa.String(64), unique=True)
    created_by_key_id: Mapped[str | None] = mapped_column(sa.String(32))
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[dt.datetime | None] = mapped_column()
    revoked_at: Mapped[dt.datetime | None] = mapped_column()


class Cluster(Base):
    """A tenant's declared cluster: its spec, its plan and its observed status."""

    __tablename__ = "clusters"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "name", name="uq_clusters_tenant_name"),)
    id_prefix = "clu"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    name: Mapped[str] = mapped_column(sa.String(63))
    region: Mapped[str] = mapped_column(sa.String(63), index=True)
    node_type: Mapped[str] = mapped_column(sa.String(63))
    node_count: Mapped[int] = mapped_column()
    spec: Mapped[dict[str, Any]] = mapped_column()
    plan: Mapped[dict[str, Any]] = mapped_column()
    desired_state: Mapped[str] = mapped_column(sa.String(16), default="present")
    """``present`` or ``absent`` (a DELETE sets it; reconcilers tear the cluster down)."""
    phase: Mapped[str] = mapped_column(sa.String(32), default="Pending", index=True)
    conditions: Mapped[list[Any]] = mapped_column(default=list)
    """[{type, status, reason, message, last_transition_at}], Kubernetes style."""
    phase_history: Mapped[list[Any]] = mapped_column(default=list)
    """[{phase, at, actor, reason}] in order."""
    events: Mapped[list[Any]] = mapped_column(default=list)
    """[{at, type, reason, message}] (the newest 200)."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__ = {"version_id_col": version}


class Node(Base):
    """A physical GPU node of the fleet; allocated to a tenant's cluster or free.

    The fleet's reconcilers own ``provisioning_state`` and ``fleet_stage`` (through
    ``velyrix.fleet.transitions.transition``); ``hardware`` holds the inventory (serials, GPUs, NICs).
    """

    __tablename__ = "nodes"
    id_prefix = "node"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(128), unique=True)
    region: Mapped[str] = mapped_column(sa.String(63), index=True)
    node_type: Mapped[str] = mapped_column(sa.String(63))
    tenant_id: Mapped[str | None] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    cluster_id: Mapped[str | None] = mapped_column(sa.ForeignKey("clusters.id"), index=True)
    provisioning_state: Mapped[str] = mapped_column(sa.String(32), default="enrolled", index=True)
    fleet_stage: Mapped[str] = mapped_column(sa.String(32), default="burn-in", index=True)
    """New nodes start their burn-in (``velyrix.fleet.states.BURN_IN``); intake sells them once it passes."""
    hardware: Mapped[dict[str, Any]] = mapped_column(default=dict)
    labels: Mapped[dict[str, Any]] = mapped_column(default=dict)
    last_error: Mapped[str | None] = mapped_column(sa.Text)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__ = {"version_id_col": version}


class NodeTransition(Base):
    """One recorded state change of a node (who, when, why), written by the fleet's ``transition()``."""

    __tablename__ = "node_transitions"
    id_prefix = "ntr"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    node_id: Mapped[str] = mapped_column(sa.ForeignKey("nodes.id"), index=True)
    field: Mapped[str] = mapped_column(sa.String(32))
    """``provisioning_state`` or ``fleet_stage``."""
    from_state: Mapped[str | None] = mapped_column(sa.String(32))
    to_state: Mapped[str] = mapped_column(sa.String(32))
    actor: Mapped[str] = mapped_column(sa.String(200))
    reason: Mapped[str] = mapped_column(sa.Text, default="")
    at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class Volume(Base):
    """Storage of one tier; its lifecycle is independent of clusters (it may outlive them)."""

    __tablename__ = "volumes"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "name", name="uq_volumes_tenant_name"),)
    id_prefix = "vol"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    name: Mapped[str] = mapped_column(sa.String(63))
    region: Mapped[str] = mapped_column(sa.String(63))
    tier: Mapped[str] = mapped_column(sa.String(63))
    size_tb: Mapped[float] = mapped_column()
    forbid_deletion: Mapped[bool] = mapped_column(default=False)
    cluster_id: Mapped[str | None] = mapped_column(sa.ForeignKey("clusters.id"))
    """The cluster it is mounted on, if any (deleting the cluster detaches, never deletes, it)."""
    state: Mapped[str] = mapped_column(sa.String(16), default="available")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__ = {"version_id_col": version}


class AuditEvent(Base):
    """One mutation attempt (successful or refused). Append-only: the API cannot change or delete one,
    and a database trigger refuses UPDATE and DELETE."""

    __tablename__ = "audit_events"
    id_prefix = "aud"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    at: Mapped[dt.datetime] = mapped_column(default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(sa.String(200))
    key_id: Mapped[str | None] = mapped_column(sa.String(32))
    tenant_id: Mapped[str | None] = mapped_column(sa.String(32), index=True)
    action: Mapped[str] = mapped_column(sa.String(64), index=True)
    target: Mapped[str] = mapped_column(sa.String(200))
    request_id: Mapped[str] = mapped_column(sa.String(64), index=True)
    source_address: Mapped[str | None] = mapped_column(sa.String(64))
    outcome: Mapped[str] = mapped_column(sa.String(16))
    """``success``, ``replayed`` (idempotent retry), ``denied`` (401/403/404/412...) or ``error``."""
    status_code: Mapped[int] = mapped_column()
    error_code: Mapped[str | None] = mapped_column(sa.String(64))
    detail: Mapped[dict[str, Any]] = mapped_column(default=dict)


class IdempotencyRecord(Base):
    """The stored answer to a POST carrying an ``Idempotency-Key`` (replayed on a retry)."""

    __tablename__ = "idempotency_records"
    __table_args__ = (sa.UniqueConstraint("owner", "key", name="uq_idempotency_owner_key"),)
    id_prefix = "idem"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    owner: Mapped[str] = mapped_column(sa.String(64))
    """The tenant id, or ``provider`` for provider keys."""
    key: Mapped[str] = mapped_column(sa.String(255))
    method: Mapped[str] = mapped_column(sa.String(8))
    path: Mapped[str] = mapped_column(sa.String(255))
    body_sha256: Mapped[str] = mapped_column(sa.String(64))
    status_code: Mapped[int] = mapped_column()
    response: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
