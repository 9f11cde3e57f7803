"""A region for rollout tests and demos: a twin of ``nodes`` nodes, tenant clusters with their own contract
windows written to a database (in-memory SQLite by default), on the twin's clock (moved by hand).

``build(seed)`` gives 128 nodes of hgx-h200-8g: 4 tenant clusters of 24 nodes (acme, globex, initech,
umbrella) with different windows (one contract promises full size), and 32 free nodes (staging pod,
canary, spares).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import base as models_base
from velyrix.controlplane.db.models import evidence as models_evidence
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.controlplane.reconcile.store import DbTransitionStore
from velyrix.fleet import clock, states, transitions
from velyrix.fleet.drivers.sim import SimClock, SimDelays, SimDriver, SimRegion
from velyrix.ops.rollouts.world import World, twin_world
from velyrix.ops.sla import contracts

EPOCH = dt.datetime(2026, 12, 7, tzinfo=dt.UTC)
"""Simulated second 0: Monday 2026-12-07 00:00 UTC."""

TENANTS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("acme", {"days": ["sat", "sun"], "start": "02:00", "hours": 6, "timezone": "UTC"}, "node-minutes"),
    ("globex", {"days": ["tue", "thu"], "start": "22:00", "hours": 4, "timezone": "America/New_York"}, "node-minutes"),
    ("initech", {"days": ["wed"], "start": "01:00", "hours": 8, "timezone": "Europe/Berlin"}, "cluster-minutes"),
    ("umbrella", {"days": ["mon", "fri"], "start": "00:00", "hours": 5, "timezone": "Asia/Tokyo"}, "node-minutes"),
)
"""Tenant, its contract's maintenance window, its measure (cluster-minutes: promised at full size)."""


@dataclass
class Region:
    """What ``build`` made."""

    sessionmaker: orm.sessionmaker[orm.Session]
    sim: SimRegion
    driver: SimDriver
    world: World
    clusters: dict[str, list[str]] = field(default_factory=dict)
    """Cluster name -> its nodes' hostnames."""
    previous_clock: clock.Clock | None = None

    def advance(self, seconds: float) -> None:
        """Move the twin's (and so the fleet's) clock ``seconds`` simulated seconds."""
        self.sim.advance(seconds)

    def close(self) -> None:
        if self.previous_clock is not None:
            clock.install(self.previous_clock)


def _contract(measure: str, window: dict[str, Any], notice_days: int) -> dict[str, Any]:
    terms = contracts.default().to_dict()
    terms.update(measure=measure, maintenance_notice_days=notice_days, maintenance_window=window)
    return terms


def build(
    seed: int = 0,
    *,
    url: str = "sqlite://",
    per_cluster: int = 24,
    free: int = 32,
    notice_days: int = 5,
    history: bool = False,
    fresh: bool = True,
) -> Region:
    """The region (see the module docstring); installs the twin's clock as the fleet's clock (``close``
    puts the previous one back). ``history``: the nodes reach their state through the fleet's transition
    table 30 days before ``EPOCH`` (node transitions and allocations: what SLA reports read). ``fresh=False``:
    the database at ``url`` already holds the region (a restarted process); nothing is added."""
    nodes = per_cluster * len(TENANTS) + free
    sim = SimRegion.build("us-east-1", {"hgx-h200-8g": nodes}, seed=seed, clock=SimClock())
    driver = SimDriver(sim, SimDelays())
    engine = sa.create_engine(url, poolclass=sa.pool.StaticPool) if url == "sqlite://" else sa.create_engine(url)
    models_base.Base.metadata.create_all(engine)
    maker = orm.sessionmaker(engine, expire_on_commit=False)
    region = Region(maker, sim, driver, twin_world(sim, driver))
    region.previous_clock = clock.install(clock.TwinClock(sim.clock, EPOCH.timestamp()))
    hosts = list(sim.nodes)
    if not fresh:
        with maker() as s:
            for c in s.scalars(sa.select(models.Cluster)):
                region.clusters[c.name] = sorted(
                    n.name for n in s.scalars(sa.select(models.Node).where(models.Node.cluster_id == c.id))
                )
        return region
    with maker() as s:
        if s.get(models_evidence.AuditLogHead, 1) is None:  # what the migrations start (a completed rollout audits)
            s.add(models_evidence.AuditLogHead(id=1, tree_size=0))
        for t, (name, window, measure) in enumerate(TENANTS):
            tenant = models.Tenant(id=models.new_id("ten"), name=name)
            s.add(tenant)
            s.add(
                models_noc.SlaContract(
                    id=models.new_id("sla"),
                    tenant_id=tenant.id,
                    name=f"{name}-sla",
                    terms=_contract(measure, window, notice_days),
                    set_by="test",
                )
            )
            cluster = models.Cluster(
                id=models.new_id("clu"),
                tenant_id=tenant.id,
                name=f"{name}-train",
                region="us-east-1",
                node_type="hgx-h200-8g",
                node_count=per_cluster,
                spec={},
                plan={},
                phase="Ready",
            )
            s.add(cluster)
            mine = hosts[free + t * per_cluster : free + (t + 1) * per_cluster]
            region.clusters[cluster.name] = mine
            for h in mine:
                s.add(_node(s, sim, h, states.ACTIVE, cluster.id, tenant.id, history))
        for h in hosts[:free]:
            s.add(_node(s, sim, h, states.AVAILABLE, None, None, history))
        s.commit()
    return region


def _node(
    s: orm.Session,
    sim: SimRegion,
    hostname: str,
    prov: str,
    cluster_id: str | None,
    tenant_id: str | None,
    history: bool,
) -> models.Node:
    sim_node = sim.node(hostname)
    su = sim_node.position.su if sim_node.position else 0
    if history:
        return _delivered(s, sim_node, su, prov, cluster_id, tenant_id)
    return models.Node(
        id=models.new_id("nod"),
        name=hostname,
        region="us-east-1",
        node_type=sim_node.node_type,
        provisioning_state=prov,
        fleet_stage=states.PRODUCTION,
        cluster_id=cluster_id,
        tenant_id=tenant_id,
        hardware={"position": {"su": su}, "firmware": dict(sim_node.firmware)},
    )


def _delivered(
    s: orm.Session, sim_node: Any, su: int, prov: str, cluster_id: str | None, tenant_id: str | None
) -> models.Node:
    """A node moved to ``prov`` (production stage) through the transition table, 30 days before ``EPOCH``."""
    node = models.Node(
        id=models.new_id("nod"),
        name=sim_node.hostname,
        region="us-east-1",
        node_type=sim_node.node_type,
        hardware={"position": {"su": su}, "firmware": dict(sim_node.firmware)},
    )
    s.add(node)
    s.flush()
    at = (EPOCH - dt.timedelta(days=30)).timestamp()
    store = DbTransitionStore(s)
    for to in (states.INSPECTING, states.AVAILABLE, states.PRODUCTION):
        transitions.transition(node, to, actor="testing", reason="delivered", store=store, now_s=at)
    if prov == states.ACTIVE:
        node.cluster_id, node.tenant_id = cluster_id, tenant_id
        for to in (states.ALLOCATED, states.PROVISIONING, states.ACTIVE):
            transitions.transition(node, to, actor="testing", reason="delivered", store=store, now_s=at)
    return node
