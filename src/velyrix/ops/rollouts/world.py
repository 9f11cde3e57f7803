"""What a rollout acts on and reads: the fleet driver, the scheduler seam that drains nodes, and each node's
installed versions; plus the fleet view the planner needs, read from the database.

``World`` is the seam (a twin's: ``twin_world``). ``fleet_view`` reads nodes, clusters, tenants and their
contracts (a contract's ``maintenance_window`` and notice; ``cluster-minutes`` contracts promise full size).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.catalog import versions
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.declarations.rollout import WindowSpec
from velyrix.fleet import states
from velyrix.fleet.drivers import base
from velyrix.health import drains
from velyrix.ops.sla import contract_store
from velyrix.planners import rollout as planner


@dataclass
class World:
    """The driver that installs versions, the seam that drains nodes, and where installed versions are read
    (``sim``: a twin region whose nodes carry them; None: the node's stored hardware inventory)."""

    driver: base.Driver
    seam: drains.SchedulerSeam
    sim: Any = None
    before_commit: Callable[[], None] | None = None
    """Called before each journal commit (``FleetRuntime.save_twin``: the twin's state is never behind)."""
    schedulers: Any = None
    """The service of the schedulers delivered with clusters (``seam(cluster_id)``: the drain seam of the
    cluster's running Slurm, or None; ``velyrix.ops.scheduler.twin_delivery.TwinSchedulers``); None: none."""

    def scheduler_of(self, session: orm.Session, hostname: str) -> drains.SchedulerSeam | None:
        """The drain seam of the Slurm delivered with ``hostname``'s cluster (None: no cluster, or no
        delivered scheduler running for it)."""
        if self.schedulers is None:
            return None
        node = session.scalar(sa.select(models.Node).where(models.Node.name == hostname))
        if node is None or not node.cluster_id:
            return None
        seam: drains.SchedulerSeam | None = self.schedulers.seam(node.cluster_id)
        return seam

    def installed(self, session: orm.Session, hostname: str) -> dict[str, str]:
        """Component -> version on ``hostname`` now (a node the twin does not hold: its stored inventory)."""
        if self.sim is not None and hostname in self.sim.nodes:
            return versions.installed(self.sim.node(hostname).firmware)
        node = session.scalar(sa.select(models.Node).where(models.Node.name == hostname))
        firmware = dict((node.hardware or {}).get("firmware", {})) if node else {}
        return versions.installed(firmware)


def twin_world(sim: Any, driver: base.Driver, seam: drains.SchedulerSeam | None = None) -> World:
    """A world on a twin region: drains held by the twin's in-memory seam, whose reboots power-cycle the node."""
    return World(driver, seam or drains.InMemorySeam(sim.clock.now, lambda n: sim.node(n).reboot(sim.clock.now())), sim)


def _window(terms: dict[str, Any]) -> WindowSpec | None:
    raw = terms.get("maintenance_window")
    if not isinstance(raw, dict):
        return None
    return WindowSpec(tuple(raw["days"]), str(raw["start"]), int(raw["hours"]), str(raw.get("timezone", "UTC")))


def _su(node: models.Node) -> str:
    position = (node.hardware or {}).get("position") or {}
    return f"su{position.get('su', 0)}" if isinstance(position, dict) else "su0"


def fleet_view(
    session: orm.Session, world: World, region: str
) -> tuple[list[planner.NodeView], list[planner.ClusterView]]:
    """The region's in-service nodes (production stage; available or with a tenant) and its tenant clusters,
    as the planner sees them."""
    q = sa.select(models.Node).where(
        models.Node.region == region,
        models.Node.fleet_stage == states.PRODUCTION,
        models.Node.provisioning_state.in_((states.AVAILABLE, states.ACTIVE)),
    )
    rows = list(session.scalars(q))
    clusters = {c.id: c for c in session.scalars(sa.select(models.Cluster).where(models.Cluster.region == region))}
    tenants = {t.id: t.name for t in session.scalars(sa.select(models.Tenant))}
    nodes = []
    for n in rows:
        c = clusters.get(n.cluster_id or "")
        nodes.append(
            planner.NodeView(
                hostname=n.name,
                node_type=n.node_type,
                scalable_unit=_su(n),
                installed=world.installed(session, n.name),
                cluster=c.name if c else None,
                tenant=tenants.get(c.tenant_id) if c else None,
            )
        )
    views = []
    for c in clusters.values():
        if c.desired_state == "absent":
            continue
        terms = contract_store.contract_for(session, c.tenant_id)
        row = session.scalar(sa.select(models_noc.SlaContract).where(models_noc.SlaContract.tenant_id == c.tenant_id))
        views.append(
            planner.ClusterView(
                name=c.name,
                tenant=tenants.get(c.tenant_id, c.tenant_id),
                node_count=c.node_count,
                full_size=terms.measure == "cluster-minutes",
                window=_window(row.terms) if row else None,
                notice_days=terms.maintenance_notice_days,
            )
        )
    return nodes, views
