"""The state history an SLA month is computed from: which nodes a cluster held (``node_allocations``)
and when each was healthy, replayed from ``node_transitions`` (healthy = provisioning state ``active``
and fleet stage ``production``), plus the cluster's maintenance windows. Reads only."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.fleet import states
from velyrix.ops.sla import availability, contracts


@dataclass
class ClusterMonth:
    """What ``availability.compute`` needs for one cluster and month."""

    cluster_id: str
    cluster_name: str
    tenant_id: str
    committed_nodes: int
    service: tuple[dt.datetime, dt.datetime]
    healthy: list[tuple[dt.datetime, dt.datetime]]
    windows: list[availability.Window]
    undegraded: list[tuple[dt.datetime, dt.datetime]] | None = None
    """``healthy`` less the intervals in which the node ran degraded (``node_degradations``); None when
    no node of the cluster ran degraded in the month."""

    def _compute(
        self, month_start: dt.datetime, month_end: dt.datetime, terms: contracts.Contract, healthy: list[Any]
    ) -> availability.Availability:
        return availability.compute(
            self.cluster_name,
            month_start=month_start,
            month_end=month_end,
            committed_nodes=self.committed_nodes,
            service=self.service,
            healthy=healthy,
            windows=self.windows,
            notice_days=terms.maintenance_notice_days,
            measure=terms.measure,
        )

    def availability(
        self, month_start: dt.datetime, month_end: dt.datetime, terms: contracts.Contract
    ) -> availability.Availability:
        """This cluster's availability over ``[month_start, month_end)`` on the contract's ``terms``
        (its notice for maintenance windows, its unit of measure, and whether a node running degraded
        delivers healthy capacity: ``degraded_counts_as_down``)."""
        full = self._compute(month_start, month_end, terms, self.healthy)
        if self.undegraded is None:
            full.degraded_counts_as_down = terms.degraded_counts_as_down
            return full
        less = self._compute(month_start, month_end, terms, self.undegraded)
        out = less if terms.degraded_counts_as_down else full
        out.degraded_node_minutes = full.delivered_node_minutes - less.delivered_node_minutes
        out.degraded_counts_as_down = terms.degraded_counts_as_down
        return out


def _chained(group: list[Any]) -> list[Any]:
    """Moves recorded at the same instant, in the order they happened: each field's moves chained by
    ``from_state`` (ids within one millisecond are not ordered)."""
    out: list[Any] = []
    for name in sorted({m.field for m in group}):
        todo = [m for m in group if m.field == name]
        targets = {m.to_state for m in todo}
        current = next((m for m in todo if m.from_state not in targets), todo[0])
        while todo:
            todo.remove(current)
            out.append(current)
            current = next((m for m in todo if m.from_state == current.to_state), todo[0] if todo else current)
    return out


def ordered(moves: list[Any]) -> list[Any]:
    """A node's transitions in the order they happened (by time, then by the chain of states)."""
    by_time: dict[dt.datetime, list[Any]] = defaultdict(list)
    for m in moves:
        by_time[m.at].append(m)
    return [m for t in sorted(by_time) for m in _chained(by_time[t])]


def _healthy_spans(moves: list[Any], start: dt.datetime, end: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
    """Healthy intervals of one node inside ``[start, end)`` from its ordered transitions."""
    prov, stage = states.ENROLLED, states.BURN_IN
    spans: list[tuple[dt.datetime, dt.datetime]] = []
    since: dt.datetime | None = None
    for mv in moves:
        was = prov == states.ACTIVE and stage == states.PRODUCTION
        if mv.field == "provisioning_state":
            prov = mv.to_state
        else:
            stage = mv.to_state
        now = prov == states.ACTIVE and stage == states.PRODUCTION
        if now and not was:
            since = mv.at
        elif was and not now and since is not None:
            spans.append((since, mv.at))
            since = None
    if since is not None:
        spans.append((since, end))
    return [(max(a, start), min(b, end)) for a, b in spans if b > start and a < end]


def cluster_months(
    session: orm.Session, month_start: dt.datetime, month_end: dt.datetime, tenant_id: str | None = None
) -> list[ClusterMonth]:
    """Every cluster that held nodes during the month (of ``tenant_id``, or all)."""
    alloc_q = sa.select(models_noc.NodeAllocation).where(
        models_noc.NodeAllocation.allocated_at < month_end,
        sa.or_(models_noc.NodeAllocation.released_at.is_(None), models_noc.NodeAllocation.released_at > month_start),
    )
    if tenant_id is not None:
        alloc_q = alloc_q.where(models_noc.NodeAllocation.tenant_id == tenant_id)
    allocations = list(session.scalars(alloc_q))
    by_cluster: dict[str, list[models_noc.NodeAllocation]] = defaultdict(list)
    for a in allocations:
        by_cluster[a.cluster_id].append(a)
    node_ids = sorted({a.node_id for a in allocations})
    moves: dict[str, list[Any]] = defaultdict(list)
    for i in range(0, len(node_ids), 500):
        t = models.NodeTransition
        q = sa.select(t.id, t.node_id, t.field, t.from_state, t.to_state, t.at)  # rows, not entities: 10x cheaper
        q = q.where(t.node_id.in_(node_ids[i : i + 500]), t.at < month_end)
        for mv in session.execute(q):
            moves[mv.node_id].append(mv)
    for node_id in list(moves):
        moves[node_id] = ordered(moves[node_id])
    degraded = _degraded(session, node_ids, month_start, month_end)
    clusters = {
        c.id: c for c in session.scalars(sa.select(models.Cluster).where(models.Cluster.id.in_(list(by_cluster))))
    }
    windows_of: dict[str, list[availability.Window]] = defaultdict(list)
    for w in session.scalars(
        sa.select(models_noc.MaintenanceWindow).where(
            models_noc.MaintenanceWindow.starts_at < month_end, models_noc.MaintenanceWindow.ends_at > month_start
        )
    ):
        windows_of[w.cluster_id].append(availability.Window(w.starts_at, w.ends_at, w.announced_at, w.label))
    out = []
    for cluster_id, rows in sorted(by_cluster.items()):
        cluster = clusters.get(cluster_id)
        first = max(month_start, min(r.allocated_at for r in rows))
        ends = [r.released_at for r in rows]
        last = month_end if any(e is None for e in ends) else min(month_end, max(e for e in ends if e is not None))
        if cluster is not None and cluster.desired_state != "absent":
            last = month_end  # still declared: a cluster that lost every node without a spare is down, not gone
        healthy, undegraded = [], []
        for r in rows:
            hi = min(month_end, r.released_at or month_end)
            spans = _healthy_spans(moves[r.node_id], max(month_start, r.allocated_at), hi)
            healthy.extend(spans)
            undegraded.extend(availability.subtract(spans, degraded.get(r.node_id, [])))
        windows = windows_of.get(cluster_id, [])
        out.append(
            ClusterMonth(
                cluster_id=cluster_id,
                cluster_name=cluster.name if cluster else cluster_id,
                tenant_id=rows[0].tenant_id,
                committed_nodes=cluster.node_count if cluster else len({r.node_id for r in rows}),
                service=(first, last),
                healthy=healthy,
                windows=windows,
                undegraded=undegraded if any(r.node_id in degraded for r in rows) else None,
            )
        )
    return out


def _degraded(
    session: orm.Session, node_ids: list[str], month_start: dt.datetime, month_end: dt.datetime
) -> dict[str, list[tuple[dt.datetime, dt.datetime]]]:
    """node id -> the intervals of the month in which it ran degraded (``node_degradations``; an open one
    lasts to the month's end)."""
    out: dict[str, list[tuple[dt.datetime, dt.datetime]]] = defaultdict(list)
    d = models.NodeDegradation
    for i in range(0, len(node_ids), 500):
        q = sa.select(d.node_id, d.started_at, d.ended_at).where(
            d.node_id.in_(node_ids[i : i + 500]),
            d.started_at < month_end,
            sa.or_(d.ended_at.is_(None), d.ended_at > month_start),
        )
        for node_id, a, b in session.execute(q):
            out[node_id].append((max(a, month_start), min(b or month_end, month_end)))
    return dict(out)
