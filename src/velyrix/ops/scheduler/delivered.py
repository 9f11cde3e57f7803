"""The scheduler's view of a cluster the control plane delivered: its name, fabric and allocated nodes."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from velyrix import errors
from velyrix.controlplane.db import models
from velyrix.ops.scheduler import clusters


def from_delivered(session: Any, cluster: str, tenant_id: str | None = None) -> clusters.SchedulerCluster:
    """``SchedulerCluster`` of the control plane's cluster ``cluster`` (id, or name within ``tenant_id``):
    the nodes allocated to it (``nodes.cluster_id``), grouped by node type, and the declared fabric."""
    row = session.get(models.Cluster, cluster)
    if row is None:
        query = sa.select(models.Cluster).where(models.Cluster.name == cluster)
        if tenant_id is not None:
            query = query.where(models.Cluster.tenant_id == tenant_id)
        found = session.scalars(query).all()
        if len(found) > 1:
            raise errors.InvalidInputError(
                f"{len(found)} clusters are named '{cluster}'", hint="give the cluster id or the tenant"
            )
        row = found[0] if found else None
    if row is None:
        names = session.scalars(sa.select(models.Cluster.name)).all()
        raise errors.UnknownNameError("cluster", cluster, names)
    nodes = session.scalars(sa.select(models.Node).where(models.Node.cluster_id == row.id)).all()
    if not nodes:
        raise errors.InvalidInputError(
            f"cluster '{row.name}' has no nodes allocated yet (phase {row.phase})",
            hint="generate the scheduler configuration once the cluster is Ready",
        )
    return clusters.from_nodes(row.name, {n.name: n.node_type for n in nodes}, fabric=(row.spec or {}).get("fabric"))
