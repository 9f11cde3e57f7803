"""Tables of the running cloud (migration ``0004``): the control plane's own evidence history of each node
(what it re-evaluates agents' reports with) and each node's health events (verdicts acted on, agents'
claims that disagreed with the evidence)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class NodeEvidence(Base):
    """The server's history of one node, built from its agent's reports (provider-only, one row per node).

    Times are the reports' ``collected_at_s`` (the node's clock; the twin's clock on the twin). ``samples``:
    the health-relevant counters of recent reports (``velyrix.health.evidence.CounterSample`` as data);
    ``xids``: ``[t_s, code, gpu]`` seen within the recurrence window; ``repairs``: what the control plane
    did to the node (``[t_s, kind, gpu, reason]``), so a recurrence after a fix climbs the ladder;
    ``held_action``: the rung of the drain the control plane holds on the node (None: none)."""

    __tablename__ = "node_evidence"
    id_prefix = "nev"
    tenancy = "own"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.String(32))
    node_id: Mapped[str] = mapped_column(sa.ForeignKey("nodes.id"), unique=True)
    node_type: Mapped[str] = mapped_column(sa.String(63))
    cluster_id: Mapped[str | None] = mapped_column(sa.String(32), index=True)
    last_t_s: Mapped[float] = mapped_column(default=0.0)
    samples: Mapped[list[Any]] = mapped_column(default=list)
    xids: Mapped[list[Any]] = mapped_column(default=list)
    repairs: Mapped[list[Any]] = mapped_column(default=list)
    peer_metrics: Mapped[dict[str, Any]] = mapped_column(default=dict)
    """Per-GPU measured figures of the latest sample (``bf16_tflops_measured``...), for peers' verdicts."""
    held_action: Mapped[str | None] = mapped_column(sa.String(32))
    server_action: Mapped[str | None] = mapped_column(sa.String(32))
    """The rung of the control plane's latest verdict on the node."""
    verdict: Mapped[dict[str, Any]] = mapped_column(default=dict)
    """The control plane's latest verdict on the node (``Verdict.to_dict()``)."""
    agent_verdict: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON)
    """The verdict the node's agent claimed in its latest report (None: it sent none)."""
    pending_ops: Mapped[list[Any]] = mapped_column(default=list)
    """Driver requests of fixes (GPU reset, reboot) not finished yet: ``[request_id, kind]``."""
    disagreements: Mapped[int] = mapped_column(default=0)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class NodeEvent(Base):
    """Something the control plane decided about a node: a verdict acted on, or an agent's claim that the
    evidence did not support (``reason`` ``AgentDisagrees``). ``tenant_id``: the node's tenant then (a
    tenant reads the events of its nodes; provider keys read all)."""

    __tablename__ = "node_events"
    id_prefix = "nvt"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    node_id: Mapped[str] = mapped_column(sa.ForeignKey("nodes.id"), index=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    t_s: Mapped[float] = mapped_column(default=0.0)
    """The node's clock when it happened (the report's ``collected_at_s``)."""
    type: Mapped[str] = mapped_column(sa.String(16), default="Normal")
    reason: Mapped[str] = mapped_column(sa.String(64))
    message: Mapped[str] = mapped_column(sa.Text, default="")
    agent_action: Mapped[str | None] = mapped_column(sa.String(32))
    server_action: Mapped[str | None] = mapped_column(sa.String(32))
