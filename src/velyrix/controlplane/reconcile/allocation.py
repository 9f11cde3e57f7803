"""Topology-aware node allocation: whole scalable units first, the rest packed into as few SUs as possible,
spares held back for replacements.

``choose`` is pure (tested on its own); ``allocate`` runs it on the database under the region's allocation
lock and moves the chosen nodes to ``allocated`` through ``transition()``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import catalog, errors
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import locks
from velyrix.controlplane.reconcile.store import flush_nodes, move
from velyrix.fleet import states


@dataclass(frozen=True)
class Candidate:
    """A free node and its place: scalable unit and slot within it."""

    name: str
    su: int
    slot: int
    su_nodes: int = 32
    """Size of the node's scalable unit (a SU is whole when all of its nodes are free)."""


def choose(free: list[Candidate], count: int, *, near_su: int | None = None) -> list[str]:
    """Pick ``count`` of ``free`` nodes (``ValueError`` if there are fewer).

    1. whole free SUs (every rail leaf of the SU belongs to the cluster: same-rail traffic stays one hop
       and no other tenant shares a leaf); 2. the remainder from the SU that fits it most tightly
       (``near_su`` first, for replacements), so other SUs stay whole; 3. if no single SU fits, from the SUs
       with the most free nodes. Within an SU, lowest slots first. Deterministic for the same input.
    """
    by_su: dict[int, list[Candidate]] = defaultdict(list)
    for c in sorted(free, key=lambda c: (c.su, c.slot)):
        by_su[c.su].append(c)
    units = {su: (len(nodes), nodes[0].su_nodes) for su, nodes in by_su.items()}
    return [c.name for su, take in choose_units(units, count, near_su=near_su) for c in by_su[su][:take]]


def choose_units(units: dict[int, tuple[int, int]], count: int, *, near_su: int | None = None) -> list[tuple[int, int]]:
    """``choose`` on counts: ``units`` maps SU -> (free nodes in it, its size in nodes); returns
    ``(su, how many of its lowest free slots)`` in the order taken (``ValueError`` if fewer are free)."""
    free = sum(n for n, _ in units.values())
    if count > free:
        raise ValueError(f"{count} nodes requested, {free} free")
    left = {su: n for su, (n, _) in units.items() if n > 0}
    taken: list[tuple[int, int]] = []
    chosen = 0
    if near_su is None:
        for su in sorted(left):
            size = units[su][1]
            if chosen + size <= count and left[su] == size:
                taken.append((su, left.pop(su)))
                chosen += size
    rest = count - chosen
    while rest > 0:
        fitting = [su for su in left if left[su] >= rest]
        if near_su in fitting:
            su = near_su
        elif fitting:
            su = min(fitting, key=lambda s: (left[s], s))
        else:
            su = max(left, key=lambda s: (left[s], -s))
        take = min(left.pop(su), rest)
        taken.append((su, take))
        rest -= take
    return taken


_POSITION_SU = sa.func.coalesce(models.Node.hardware[("position", "su")].as_integer(), 0)
_POSITION_SLOT = sa.func.coalesce(models.Node.hardware[("position", "slot")].as_integer(), 0)
_POSITION_SU_NODES = models.Node.hardware[("position", "su_nodes")].as_integer()
"""A node's place from its ``hardware`` column, read by the database (``StoredHardware``'s ``su``, ``slot``,
``su_nodes``): allocation never loads or decodes the rows of the pool."""


def _free_where(region: str, node_type: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (
        models.Node.region == region,
        models.Node.node_type == node_type,
        models.Node.provisioning_state == states.AVAILABLE,
        models.Node.fleet_stage == states.PRODUCTION,
        models.Node.cluster_id.is_(None),
    )


def free_units(session: orm.Session, region: str, node_type: str) -> dict[int, tuple[int, int]]:
    """The free nodes of ``node_type`` in ``region`` counted per scalable unit, in SQL: SU -> (free nodes,
    the SU's size in nodes; the region's ``scalable_unit_nodes`` where the hardware does not say)."""
    default = catalog.region(region).scalable_unit_nodes
    rows = session.execute(
        sa.select(_POSITION_SU, sa.func.count(), sa.func.max(_POSITION_SU_NODES))
        .where(*_free_where(region, node_type))
        .group_by(_POSITION_SU)
    ).all()
    return {int(su): (int(n), default if size is None else int(size)) for su, n, size in rows}


@dataclass(frozen=True)
class Capacity:
    """One node type of a region, counted from the node table (``fleet_capacity``).

    ``total``: every node not retired; ``free``: production, available, in no cluster; ``spare``: held back
    for replacements (ceil(total x spare_fraction), as ``allocate`` reserves it); ``in_use``: in a cluster;
    ``promised``: declared by present clusters and not allocated yet; ``available``: what a new cluster may
    still get (free - spare - promised, at least 0); ``by_state``: nodes per fleet stage and provisioning
    state (``quarantined``, ``rma``, ``burn-in``, ``sanitizing``...), none of which is available."""

    node_type: str
    total: int
    free: int
    spare: int
    in_use: int
    promised: int
    available: int
    by_state: dict[str, int]


def fleet_capacity(session: orm.Session, region: str) -> dict[str, Capacity]:
    """Capacity per node type of ``region`` from its nodes and clusters (the numbers ``allocate`` uses)."""
    fraction = catalog.region(region).spare_fraction
    in_cluster = models.Node.cluster_id.is_not(None)
    rows = session.execute(
        sa.select(
            models.Node.node_type, models.Node.fleet_stage, models.Node.provisioning_state, in_cluster, sa.func.count()
        )
        .where(models.Node.region == region)
        .group_by(models.Node.node_type, models.Node.fleet_stage, models.Node.provisioning_state, in_cluster)
    ).all()
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for node_type, stage, prov, clustered, n in rows:
        c = counts[node_type]
        if stage == states.RETIRED:
            continue
        c["total"] += n
        c[f"stage:{stage}"] += n
        c[f"state:{prov}"] += n
        if clustered:
            c["in_use"] += n
        elif stage == states.PRODUCTION and prov == states.AVAILABLE:
            c["free"] += n
    declared = session.execute(
        sa.select(models.Cluster.id, models.Cluster.node_type, models.Cluster.node_count).where(
            models.Cluster.region == region, models.Cluster.desired_state == "present"
        )
    ).all()
    members = dict(
        session.execute(
            sa.select(models.Node.cluster_id, sa.func.count())
            .where(models.Node.region == region, models.Node.cluster_id.is_not(None))
            .group_by(models.Node.cluster_id)
        ).all()
    )
    promised: dict[str, int] = defaultdict(int)
    for cid, node_type, count in declared:
        promised[node_type] += max(0, int(count) - int(members.get(cid, 0)))
    out = {}
    for node_type in sorted(set(counts) | set(promised)):
        c = counts[node_type]
        spare = math.ceil(c["total"] * fraction)
        by_state = {k.split(":", 1)[1]: v for k, v in sorted(c.items()) if ":" in k}
        out[node_type] = Capacity(
            node_type=node_type,
            total=c["total"],
            free=c["free"],
            spare=spare,
            in_use=c["in_use"],
            promised=promised[node_type],
            available=max(0, c["free"] - spare - promised[node_type]),
            by_state=by_state,
        )
    return out


def reserve(session: orm.Session, region: str, node_type: str, count: int, *, already: int = 0) -> None:
    """Check, under the region's allocation lock (held until the caller commits), that a cluster may declare
    ``count`` nodes of ``node_type`` (``already``: what it declared before, on an update). Raises
    ``CapacityError`` with the figures otherwise: concurrent declarations cannot all pass."""
    locks.hold(session, f"allocate/{region}/{node_type}")
    cap = fleet_capacity(session, region).get(node_type)
    available = cap.available if cap else 0
    if count - already > available:
        free = cap.free if cap else 0
        raise errors.CapacityError(
            f"{region} has {available} {node_type} nodes available, {count - already} more requested "
            f"({free} free, {cap.spare if cap else 0} held back as spares, {cap.promised if cap else 0} promised "
            "to clusters being delivered)",
            hint="lower node_count, or choose another region or node type (GET /v1/regions)",
        )


def spare_reserve(session: orm.Session, region: str, node_type: str) -> int:
    """Nodes of ``node_type`` held back in ``region`` for replacements (``fleet_capacity``'s ``spare``)."""
    cap = fleet_capacity(session, region).get(node_type)
    return cap.spare if cap else 0


def allocate(
    session: orm.Session,
    cluster: models.Cluster,
    count: int,
    *,
    actor: str,
    replacement: bool = False,
    near_su: int | None = None,
) -> list[models.Node]:
    """Allocate ``count`` nodes to ``cluster`` (single-tenant: the nodes get its tenant and cluster).

    A first allocation may not eat into the spare reserve; a ``replacement`` may. Raises ``CapacityError``
    when the region cannot serve the request. Holds the region's allocation lock until the caller commits.
    """
    if count <= 0:
        return []
    locks.hold(session, f"allocate/{cluster.region}/{cluster.node_type}")
    units = free_units(session, cluster.region, cluster.node_type)
    reserve = 0 if replacement else spare_reserve(session, cluster.region, cluster.node_type)
    usable = sum(n for n, _ in units.values()) - reserve
    if count > usable:
        what = "replacement node" if replacement else f"{cluster.node_type} nodes"
        raise errors.CapacityError(
            f"{cluster.region} has {max(0, usable)} {what} available for '{cluster.name}', {count} needed"
            + (f" ({reserve} more held back as spares)" if reserve else ""),
            hint="lower node_count, wait for capacity to free up, or choose another region or node type",
        )
    plan = dict(choose_units(units, count, near_su=near_su))
    rows = session.execute(  # only the chosen units' free nodes are loaded, lowest slots first
        sa.select(models.Node, _POSITION_SU)
        .where(*_free_where(cluster.region, cluster.node_type), _POSITION_SU.in_(sorted(plan)))
        .order_by(_POSITION_SU, _POSITION_SLOT, models.Node.name)
    )
    by_su: dict[int, list[models.Node]] = defaultdict(list)
    for node, su in rows:
        by_su[int(su)].append(node)
    chosen = [node for su, take in plan.items() for node in by_su[su][:take]]
    for node in chosen:
        node.cluster_id = cluster.id
        node.tenant_id = cluster.tenant_id
        move(
            session,
            node,
            states.ALLOCATED,
            actor=actor,
            reason=("replacement for " if replacement else "allocated to ") + f"cluster {cluster.name}",
        )
    flush_nodes(session, chosen)  # one bulk UPDATE; a concurrent allocation of a node fails on its version
    session.flush()
    return chosen
