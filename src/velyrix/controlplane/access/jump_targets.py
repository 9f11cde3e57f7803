"""The jump host's configuration from the control plane's database: every tenant's CA, and a target per
allocated node (its tenant, cluster and the cluster's operating mode) at the address its sshd listens
on (``addresses``: on the twin, one loopback port per node)."""

from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.access import jumphost, modes
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import access as tables


def config(
    session: orm.Session,
    database_url: str,
    addresses: Mapping[str, tuple[str, int]],
    bmc_addresses: Mapping[str, tuple[str, int]] | None = None,
) -> jumphost.JumpConfig:
    """A ``JumpConfig`` for the nodes named in ``addresses`` (node name -> host, port) that are
    allocated to a cluster; nodes without a cluster are left out (nobody's to reach)."""
    node, cluster = models.Node, models.Cluster
    rows = session.execute(
        sa.select(node.name, node.tenant_id, node.cluster_id, cluster.spec)
        .join(cluster, cluster.id == node.cluster_id)
        .where(node.name.in_(list(addresses)))
        .order_by(node.name)
    )
    bmcs = bmc_addresses or {}
    targets = []
    for name, tenant_id, cluster_id, spec in rows:
        host, port = addresses[name]
        bmc_host, bmc_port = bmcs.get(name, (None, None))
        mode = str((spec or {}).get("operating_mode") or modes.MANAGED)
        targets.append(jumphost.NodeTarget(name, tenant_id, cluster_id, mode, host, port, bmc_host, bmc_port))
    cas = session.execute(sa.select(tables.SshAuthority.tenant_id, tables.SshAuthority.public_key))
    authorities = {tenant_id: key for tenant_id, key in cas if tenant_id is not None}
    return jumphost.JumpConfig(database_url, tuple(targets), authorities)
