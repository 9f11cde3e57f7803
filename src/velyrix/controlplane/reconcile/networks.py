"""Tenant networks of a cluster: an Ethernet VLAN in a VRF, and on the compute fabric an InfiniBand partition
key or, on an Ethernet fabric (Spectrum-X), a VXLAN VNI; each unique among the live clusters of a region
(``network_allocations`` enforces it with a unique index)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import catalog, errors
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import locks
from velyrix.fleet.drivers import base
from velyrix.planners import fabric

PKEY_RANGE = (fabric.PKEY_FIRST, fabric.PKEY_LAST)
"""Usable 15-bit partition keys, the plan's (REFERENCE §1: 0x0001-0x7ffe; 0x7fff is the default partition)."""
VNI_RANGE = (fabric.VNI_FIRST, fabric.VNI_LAST)
"""VXLAN network identifiers for tenants on Ethernet fabrics, the plan's (24 bits, RFC 7348 §5)."""


def kinds(cluster: models.Cluster) -> tuple[str, str]:
    """What the cluster's networks consist of: ``("vlan", "pkey")`` on InfiniBand, ``("vlan", "vni")`` on
    an Ethernet compute fabric."""
    name = (cluster.spec or {}).get("fabric")
    ethernet = bool(name) and catalog.fabric(name).protocol == "ethernet"
    return ("vlan", "vni") if ethernet else ("vlan", "pkey")


def _lowest_free(used: set[int], lo: int, hi: int) -> int | None:
    for value in range(lo, hi + 1):
        if value not in used:
            return value
    return None


def ensure(session: orm.Session, cluster: models.Cluster) -> base.NetworkAttachment:
    """The cluster's networks, allocating the VLAN and the partition key (or VNI) on first call (idempotent).

    Raises ``CapacityError`` when the region has no VLAN, partition key or VNI left.
    """
    rows = {
        r.kind: r.value
        for r in session.scalars(
            sa.select(models.NetworkAllocation).where(models.NetworkAllocation.cluster_id == cluster.id)
        )
    }
    wanted = kinds(cluster)
    missing = [k for k in wanted if k not in rows]
    if missing:
        locks.hold(session, f"networks/{cluster.region}")
        region = catalog.region(cluster.region)
        ranges = {"vlan": region.vlan_range, "pkey": PKEY_RANGE, "vni": VNI_RANGE}
        for kind in missing:
            used = set(
                session.scalars(
                    sa.select(models.NetworkAllocation.value).where(
                        models.NetworkAllocation.region == cluster.region, models.NetworkAllocation.kind == kind
                    )
                )
            )
            value = _lowest_free(used, *ranges[kind])
            if value is None:
                raise errors.CapacityError(
                    f"{cluster.region} has no free {kind} left for '{cluster.name}'",
                    hint="destroy unused clusters to release their networks",
                )
            session.add(
                models.NetworkAllocation(
                    region=cluster.region, kind=kind, value=value, tenant_id=cluster.tenant_id, cluster_id=cluster.id
                )
            )
            rows[kind] = value
        session.flush()
    return base.NetworkAttachment(
        vlan=rows["vlan"], vrf=f"vrf-{cluster.tenant_id}-{cluster.name}", pkey=rows.get("pkey"), vni=rows.get("vni")
    )


def release(session: orm.Session, cluster: models.Cluster) -> None:
    """Return the cluster's VLAN and partition key (or VNI) to the region."""
    session.execute(sa.delete(models.NetworkAllocation).where(models.NetworkAllocation.cluster_id == cluster.id))
