"""The monthly SLA report of one tenant: availability per cluster (with the minute-by-minute evidence),
incidents (counts by priority, time to acknowledge and to resolve, P1 first-response percentiles against
the contract's target), and capacity (committed, delivered, spare, quarantined, RMA). Definitions:
docs/sla.md."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db import health_tables, models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.fleet import states
from velyrix.ops.billing import events
from velyrix.ops.noc import incidents as noc_incidents
from velyrix.ops.sla import availability, contract_store, history


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile ``q`` (0..100) of ``values``; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _minutes(a: dt.datetime, b: dt.datetime | None) -> float | None:
    return None if b is None else round((b - a).total_seconds() / 60, 2)


def _incidents(
    session: orm.Session, tenant_id: str, lo: dt.datetime, hi: dt.datetime, target_min: int
) -> dict[str, Any]:
    q = sa.select(health_tables.Incident).where(
        health_tables.Incident.tenant_id == tenant_id,
        health_tables.Incident.opened_at >= lo,
        health_tables.Incident.opened_at < hi,
    )
    rows = [(i, noc_incidents.state_of(session, i)) for i in session.scalars(q)]
    by_priority: dict[str, dict[str, Any]] = {}
    for p in ("P1", "P2", "P3", "P4"):
        mine = [(i, r) for i, r in rows if i.priority == p]
        ack = [m for _, r in mine if (m := _minutes(r.opened_at, r.acknowledged_at)) is not None]
        res = [m for _, r in mine if (m := _minutes(r.opened_at, r.resolved_at)) is not None]
        by_priority[p] = {
            "count": len(mine),
            "mean_minutes_to_acknowledge": round(sum(ack) / len(ack), 2) if ack else None,
            "mean_minutes_to_resolve": round(sum(res) / len(res), 2) if res else None,
        }
    first = [m for i, r in rows if i.priority == "P1" and (m := _minutes(r.opened_at, r.first_response_at)) is not None]
    within = sum(1 for m in first if m <= target_min)
    return {
        "by_priority": by_priority,
        "p1_first_response": {
            "target_minutes": target_min,
            "responded": len(first),
            "p50_minutes": percentile(first, 50),
            "p90_minutes": percentile(first, 90),
            "p99_minutes": percentile(first, 99),
            "within_target_percent": round(100 * within / len(first), 2) if first else None,
        },
        "incidents": [noc_incidents.out(i, r) | {"opened_at": r.opened_at.isoformat()} for i, r in rows],
    }


def _capacity(
    session: orm.Session, months: list[history.ClusterMonth], results: list[availability.Availability]
) -> dict[str, Any]:
    ids = [cm.cluster_id for cm in months]
    node_ids = set(
        session.scalars(
            sa.select(models_noc.NodeAllocation.node_id).where(models_noc.NodeAllocation.cluster_id.in_(ids))
        )
    )
    nodes = [session.get(models.Node, n) for n in node_ids]
    types = {c.node_type for cm in months if (c := session.get(models.Cluster, cm.cluster_id))}
    spare = session.scalar(
        sa.select(sa.func.count())
        .select_from(models.Node)
        .where(
            models.Node.node_type.in_(types),
            models.Node.provisioning_state == states.AVAILABLE,
            models.Node.fleet_stage == states.PRODUCTION,
        )
    )
    committed = sum(r.committed_node_minutes for r in results)
    delivered = sum(r.delivered_node_minutes for r in results)
    return {
        "committed_nodes": sum(cm.committed_nodes for cm in months),
        "committed_node_minutes": committed,
        "delivered_node_minutes": delivered,
        "spare_nodes_now": int(spare or 0),
        "quarantined_nodes_now": sum(1 for n in nodes if n and n.fleet_stage == states.QUARANTINED),
        "rma_nodes_now": sum(1 for n in nodes if n and n.fleet_stage == states.RMA),
    }


def build(session: orm.Session, tenant_id: str, month: str) -> dict[str, Any]:
    """The report of ``tenant_id`` for ``month`` (``YYYY-MM``) as plain data."""
    lo, hi = events.month_bounds(month)
    terms = contract_store.contract_for(session, tenant_id)
    months = history.cluster_months(session, lo, hi, tenant_id)
    results = [cm.availability(lo, hi, terms) for cm in months]
    clusters = []
    for cm, res in zip(months, results, strict=True):
        data = res.to_dict(lo)
        data["cluster_id"] = cm.cluster_id
        data["target_percent"] = str(terms.availability_target_percent)
        data["met"] = res.percent >= terms.availability_target_percent
        data["credit_percent"] = str(terms.credit_percent(res.percent))
        clusters.append(data)
    p1 = terms.response.get("P1")
    return {
        "tenant_id": tenant_id,
        "month": month,
        "contract": terms.to_dict(),
        "clusters": clusters,
        "incidents": _incidents(session, tenant_id, lo, hi, p1.first_response_min if p1 else 15),
        "capacity": _capacity(session, months, results),
    }
