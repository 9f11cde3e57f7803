"""Per-node reconcile work (migration ``0015``): one row per node of a cluster's ``cluster_work``, so that one
node's progress is one row update and a settled cluster is checked without reading any of them.

The reconcilers read and write the rows with Core statements (``reconcile.node_entry.fetch`` / ``store``):
a step loads its cluster's rows once and writes back only the rows it changed, in bulk.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base
from velyrix.controlplane.db.models.resources import Node


class ClusterWorkNode(Base):
    """Where one node of a cluster stands in reconcile (a ``reconcile.node_entry.NodeEntry``).

    ``step``: one of ``reconcile.phases.STEPS``; ``attempt``: failed retryable requests so far; ``seq``: the
    allocation generation the node came with; ``release``: why it leaves the cluster (None while it
    belongs); ``failed``: why it was replaced; ``results``: its acceptance summary (None before acceptance).
    """

    __tablename__ = "cluster_work_nodes"
    __table_args__ = (sa.Index("ix_cluster_work_nodes_release", "cluster_id", "release"),)
    id_prefix = "wkn"
    tenancy = "global"

    cluster_id: Mapped[str] = mapped_column(sa.ForeignKey("clusters.id"), primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(128), primary_key=True)
    step: Mapped[str] = mapped_column(sa.String(32))
    attempt: Mapped[int] = mapped_column(default=0)
    seq: Mapped[int] = mapped_column(default=0)
    release: Mapped[str | None] = mapped_column(sa.String(64))
    failed: Mapped[str | None] = mapped_column(sa.Text)
    results: Mapped[list[Any] | None] = mapped_column()


# The settled-cluster check (``reconcile.cluster.needs_work``) looks for a cluster's nodes out of service
# through these: a range of each index instead of a scan of every node of the cluster.
sa.Index("ix_nodes_cluster_stage", Node.cluster_id, Node.fleet_stage)
sa.Index("ix_nodes_cluster_state", Node.cluster_id, Node.provisioning_state)
