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
from velyrix.controlplane.reconcile.store import move
from velyrix.fleet import states
from velyrix.fleet.hardware import StoredHardware


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
    if count > len(free):
        raise ValueError(f"{count} nodes requested, {len(free)} free")
    by_su: dict[int, list[Candidate]] = defaultdict(list)
    for c in sorted(free, key=lambda c: (c.su, c.slot)):
        by_su[c.su].append(c)
    chosen: list[Candidate] = []
    if near_su is None:
        for su in sorted(by_su):
            if len(chosen) + by_su[su][0].su_nodes > count:
                continue
            if len(by_su[su]) == by_su[su][0].su_nodes:
                chosen.extend(by_su.pop(su))
    rest = count - len(chosen)
    while rest > 0:
        fitting = [su for su in by_su if len(by_su[su]) >= rest]
        if near_su in fitting:
            su = near_su
        elif fitting:
            su = min(fitting, key=lambda s: (len(by_su[s]), s))
        else:
            su = max(by_su, key=lambda s: (len(by_su[s]), -s))
        take = by_su.pop(su)[:rest]
        chosen.extend(take)
        rest -= len(take)
    return [c.name for c in chosen]


def _candidate(node: models.Node) -> Candidate:
    hw = StoredHardware.from_dict(node.hardware)
    return Candidate(
        name=node.name,
        su=hw.su or 0,
        slot=hw.slot or 0,
        su_nodes=catalog.region(node.region).scalable_unit_nodes if hw.su_nodes is None else hw.su_nodes,
    )


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
    free_rows = session.scalars(
        sa.select(models.Node).where(
            models.Node.region == cluster.region,
            models.Node.node_type == cluster.node_type,
            models.Node.provisioning_state == states.AVAILABLE,
            models.Node.fleet_stage == states.PRODUCTION,
            models.Node.cluster_id.is_(None),
        )
    ).all()
    reserve = 0 if replacement else spare_reserve(session, cluster.region, cluster.node_type)
    usable = len(free_rows) - reserve
    if count > usable:
        what = "replacement node" if replacement else f"{cluster.node_type} nodes"
        raise errors.CapacityError(
            f"{cluster.region} has {max(0, usable)} {what} available for '{cluster.name}', {count} needed"
            + (f" ({reserve} more held back as spares)" if reserve else ""),
            hint="lower node_count, wait for capacity to free up, or choose another region or node type",
        )
    names = set(choose([_candidate(n) for n in free_rows], count, near_su=near_su))
    chosen = [n for n in free_rows if n.name in names]
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
    session.flush()  # a concurrent allocation of the same node fails here on its version column
    return chosen
