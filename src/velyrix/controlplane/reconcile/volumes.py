"""Storage of a cluster: one volume per tier the spec asks for, named ``<cluster>-<tier>``. Volumes outlive
their cluster: a re-created cluster of the same name gets its old volumes back."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import catalog
from velyrix.controlplane.cmk import service as cmk_service
from velyrix.controlplane.db import models
from velyrix.fleet.drivers import base


def ensure(session: orm.Session, cluster: models.Cluster) -> list[base.VolumeAttachment]:
    """Create or adopt the cluster's volumes (resized to the spec) and return them as attachments."""
    wanted: dict[str, float] = {}
    for key, size_tb in (cluster.spec.get("storage") or {}).items():
        if size_tb:
            wanted[catalog.storage_tier_by_hcl_key(key).name] = float(size_tb)
    existing = {
        v.name: v
        for v in session.scalars(
            sa.select(models.Volume).where(
                models.Volume.tenant_id == cluster.tenant_id, models.Volume.region == cluster.region
            )
        )
    }
    out = []
    for tier, size_tb in wanted.items():
        name = f"{cluster.name}-{tier.replace('_', '-')}"
        vol = existing.get(name)
        if vol is None:
            vol = models.Volume(
                tenant_id=cluster.tenant_id,
                name=name,
                region=cluster.region,
                tier=tier,
                size_tb=size_tb,
                cluster_id=cluster.id,
                state="attached",
            )
            session.add(vol)
        else:
            if vol.size_tb < size_tb:
                vol.size_tb = size_tb  # grow only: shrinking a file system loses data
            vol.cluster_id, vol.state = cluster.id, "attached"
        out.append(base.VolumeAttachment(volume_id=vol.id, tier=tier, mount=f"/mnt/{tier}", size_tb=vol.size_tb))
    session.flush()
    return out


def detach(session: orm.Session, cluster: models.Cluster, *, delete: bool) -> list[str]:
    """Detach the cluster's volumes (state ``available``), or delete those that allow it when ``delete``.
    Returns the names of deleted volumes."""
    deleted = []
    for vol in session.scalars(sa.select(models.Volume).where(models.Volume.cluster_id == cluster.id)):
        vol.cluster_id = None
        if delete and not vol.forbid_deletion:
            deleted.append(vol.name)
            cmk_service.forget_volume(session, vol.id)  # its wrapped data key goes with it (cryptographic erase)
            session.delete(vol)
        else:
            vol.state = "available"
    session.flush()
    return deleted
