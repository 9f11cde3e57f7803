"""Status pages in Atlassian Statuspage's ``summary.json`` shape (``page``, ``components``, ``incidents``,
``scheduled_maintenances``, ``status``), so that any reader of Statuspage summaries (dashboards,
exporters, chat bots) reads Velyrix's.

Two pages (definitions: docs/sla.md, 'Status pages'):

- a **region's** page, public: a component per node type the region's fleet holds plus the control plane's
  API; the provider's own incidents (no tenant); the maintenance windows of the region's clusters (label,
  times and node type only: never a tenant's name);
- a **tenant's** page (its keys and the provider's): a component per delivered cluster; the tenant's
  incidents; its clusters' maintenance windows.

Only what is not over is listed, as Statuspage does: incidents not yet resolved, windows not yet ended.
Velyrix states map onto Statuspage's (``INCIDENT_STATUS``, ``IMPACT``); a component's status is computed
from the fleet (``_cluster_status``, ``_type_status``). Times are the fleet's clock. Reads only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import catalog, errors
from velyrix.controlplane.db import health_tables, models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.controlplane.reconcile import phases
from velyrix.fleet import states
from velyrix.ops.noc import incidents as noc_incidents
from velyrix.ops.noc import states as s

INCIDENT_STATUS = {s.OPEN: "investigating", s.ACKNOWLEDGED: "identified", s.MITIGATED: "monitoring"}
"""Velyrix incident state -> Statuspage incident status (resolved ones are not on a summary)."""
IMPACT = {"P1": "critical", "P2": "major", "P3": "minor", "P4": "none"}
"""Incident priority -> Statuspage impact."""
COMPONENT_RANK = {
    "operational": 0,
    "under_maintenance": 1,
    "degraded_performance": 2,
    "partial_outage": 3,
    "major_outage": 4,
}
INDICATOR_RANK = {"none": 0, "maintenance": 1, "minor": 2, "major": 3, "critical": 4}
DESCRIPTIONS = {
    "none": "All Systems Operational",
    "maintenance": "Service Under Maintenance",
    "minor": "Minor Service Outage",
    "major": "Partial System Outage",
    "critical": "Major Service Outage",
}
_COMPONENT_INDICATOR = {
    "under_maintenance": "maintenance",
    "degraded_performance": "minor",
    "partial_outage": "minor",
    "major_outage": "major",
}
DELIVERED_PHASES = (phases.READY, phases.DEGRADED, phases.FAILED)


def _iso(t: dt.datetime | None) -> str | None:
    return t.astimezone(dt.UTC).isoformat().replace("+00:00", "Z") if t else None


def _component(cid: str, name: str, status: str, position: int, page_id: str, description: str) -> dict[str, Any]:
    return {
        "id": cid,
        "name": name,
        "status": status,
        "position": position,
        "description": description,
        "showcase": True,
        "group_id": None,
        "group": False,
        "only_show_if_degraded": False,
        "page_id": page_id,
        "created_at": None,
        "updated_at": None,
        "start_date": None,
    }


def _degraded_nodes(session: orm.Session) -> set[str]:
    q = sa.select(models.NodeDegradation.node_id).where(models.NodeDegradation.ended_at.is_(None))
    return set(session.scalars(q))


def _in_progress(windows: Iterable[models_noc.MaintenanceWindow], now: dt.datetime) -> set[str]:
    return {w.cluster_id for w in windows if w.starts_at <= now < w.ends_at}


def _cluster_status(cluster: models.Cluster, nodes: list[models.Node], degraded: set[str], busy: set[str]) -> str:
    """``major_outage`` with no node delivering, ``partial_outage`` with fewer than committed (or phase
    Degraded), ``degraded_performance`` when a delivered node runs degraded, ``under_maintenance`` inside a
    window, else ``operational``."""
    serving = [n for n in nodes if n.provisioning_state == states.ACTIVE and n.fleet_stage == states.PRODUCTION]
    if not serving or cluster.phase == phases.FAILED:
        return "major_outage"
    if len(serving) < cluster.node_count or cluster.phase == phases.DEGRADED:
        return "partial_outage"
    if any(n.id in degraded for n in serving):
        return "degraded_performance"
    return "under_maintenance" if cluster.id in busy else "operational"


def _type_status(nodes: list[models.Node], clusters: list[models.Cluster], degraded: set[str], busy: set[str]) -> str:
    """A node type of a region: ``major_outage`` when none of its nodes is in production, ``partial_outage``
    when a tenant's cluster of the type is short (phase Degraded), ``degraded_performance`` when a node of
    it runs degraded, ``under_maintenance`` while a window is in progress on one of its clusters."""
    if not any(n.fleet_stage == states.PRODUCTION for n in nodes):
        return "major_outage"
    if any(c.phase == phases.DEGRADED for c in clusters):
        return "partial_outage"
    if any(n.id in degraded for n in nodes):
        return "degraded_performance"
    return "under_maintenance" if any(c.id in busy for c in clusters) else "operational"


def _incident(
    session: orm.Session, inc: health_tables.Incident, page_id: str, components: list[dict[str, Any]], base: str
) -> dict[str, Any] | None:
    row = noc_incidents.state_of(session, inc)
    if row.state not in INCIDENT_STATUS:
        return None
    updates = []
    status = "investigating"
    for e in noc_incidents.timeline(session, inc.id):
        if e.kind == "state":
            status = INCIDENT_STATUS.get(str(e.detail.get("to")), status)
        if e.kind in ("opened", "state", "note"):
            updates.append(
                {
                    "id": e.id,
                    "status": status,
                    "body": e.text,
                    "incident_id": inc.id,
                    "created_at": _iso(e.at),
                    "updated_at": _iso(e.at),
                    "display_at": _iso(e.at),
                    "affected_components": None,
                }
            )
    updates.reverse()  # newest first, as Statuspage lists them
    return {
        "id": inc.id,
        "name": f"{inc.number}: {inc.title}"[:255],
        "status": INCIDENT_STATUS[row.state],
        "impact": IMPACT.get(inc.priority, "none"),
        "created_at": _iso(row.opened_at),
        "updated_at": updates[0]["created_at"] if updates else _iso(row.opened_at),
        "started_at": _iso(row.opened_at),
        "monitoring_at": _iso(row.mitigated_at),
        "resolved_at": None,
        "shortlink": f"{base}/v1/incidents/{inc.id}",
        "page_id": page_id,
        "incident_updates": updates,
        "components": components,
    }


def _maintenance(w: models_noc.MaintenanceWindow, now: dt.datetime, page_id: str, component: dict[str, Any]) -> Any:
    return {
        "id": w.id,
        "name": w.label or "Scheduled maintenance",
        "status": "in_progress" if w.starts_at <= now else "scheduled",
        "impact": "maintenance",
        "created_at": _iso(w.announced_at),
        "updated_at": _iso(w.announced_at),
        "started_at": _iso(w.starts_at),
        "monitoring_at": None,
        "resolved_at": None,
        "shortlink": "",
        "page_id": page_id,
        "scheduled_for": _iso(w.starts_at),
        "scheduled_until": _iso(w.ends_at),
        "incident_updates": [],
        "components": [component],
    }


def _summary(
    page: dict[str, Any],
    components: list[dict[str, Any]],
    incidents: list[dict[str, Any]],
    maintenances: list[dict[str, Any]],
) -> dict[str, Any]:
    worst = max([c["status"] for c in components] or ["operational"], key=COMPONENT_RANK.__getitem__)
    indicator = _COMPONENT_INDICATOR.get(worst, "none")
    for inc in incidents:
        if INDICATOR_RANK[inc["impact"]] > INDICATOR_RANK[indicator]:
            indicator = inc["impact"]
    return {
        "page": page,
        "components": components,
        "incidents": incidents,
        "scheduled_maintenances": maintenances,
        "status": {"indicator": indicator, "description": DESCRIPTIONS[indicator]},
    }


def _windows(session: orm.Session, cluster_ids: list[str], now: dt.datetime) -> list[models_noc.MaintenanceWindow]:
    q = sa.select(models_noc.MaintenanceWindow).where(
        models_noc.MaintenanceWindow.cluster_id.in_(cluster_ids), models_noc.MaintenanceWindow.ends_at > now
    )
    return sorted(session.scalars(q), key=lambda w: (w.starts_at, w.id))


def _page(page_id: str, name: str, url: str, now: dt.datetime) -> dict[str, Any]:
    return {"id": page_id, "name": name, "url": url, "time_zone": "Etc/UTC", "updated_at": _iso(now)}


def region_summary(session: orm.Session, region: str, now: dt.datetime, base: str) -> dict[str, Any]:
    """The public page of ``region`` at ``now``; ``base``: the API's URL (links). Unknown region: 404."""
    if region not in catalog.region_names():
        raise errors.NotFoundError(kind="region", name=region)
    page_id = f"velyrix-{region}"
    nodes = list(session.scalars(sa.select(models.Node).where(models.Node.region == region)))
    clusters = list(
        session.scalars(
            sa.select(models.Cluster).where(models.Cluster.region == region, models.Cluster.desired_state != "absent")
        )
    )
    windows = _windows(session, [c.id for c in clusters], now)
    degraded, busy = _degraded_nodes(session), _in_progress(windows, now)
    api = _component(f"{page_id}-api", "Control plane API", "operational", 0, page_id, "the Velyrix API")
    by_type: dict[str, dict[str, Any]] = {}
    for i, node_type in enumerate(sorted({n.node_type for n in nodes if n.fleet_stage != states.RETIRED}), 1):
        mine = [n for n in nodes if n.node_type == node_type and n.fleet_stage != states.RETIRED]
        status = _type_status(mine, [c for c in clusters if c.node_type == node_type], degraded, busy)
        by_type[node_type] = _component(f"{page_id}-{node_type}", f"{node_type} compute", status, i, page_id, "")
    q = sa.select(health_tables.Incident).where(
        health_tables.Incident.tenant_id.is_(None), health_tables.Incident.resolved_at.is_(None)
    )
    incidents = [d for inc in session.scalars(q) if (d := _incident(session, inc, page_id, [], base))]
    type_of = {c.id: c.node_type for c in clusters}
    maintenances = [_maintenance(w, now, page_id, by_type.get(type_of[w.cluster_id], api)) for w in windows]
    page = _page(page_id, f"Velyrix {region}", f"{base}/v1/status/regions/{region}/summary.json", now)
    return _summary(page, [api, *by_type.values()], incidents, maintenances)


def tenant_summary(session: orm.Session, tenant: models.Tenant, now: dt.datetime, base: str) -> dict[str, Any]:
    """The page of ``tenant`` (the caller has checked who may read it) at ``now``."""
    page_id = f"velyrix-{tenant.id}"
    q = sa.select(models.Cluster).where(
        models.Cluster.tenant_id == tenant.id,
        models.Cluster.desired_state != "absent",
        models.Cluster.phase.in_(DELIVERED_PHASES),
    )
    clusters = sorted(session.scalars(q), key=lambda c: c.name)
    ids = [c.id for c in clusters]
    nodes = list(session.scalars(sa.select(models.Node).where(models.Node.cluster_id.in_(ids))))
    windows = _windows(session, ids, now)
    degraded, busy = _degraded_nodes(session), _in_progress(windows, now)
    components: dict[str, dict[str, Any]] = {}
    for i, c in enumerate(clusters):
        status = _cluster_status(c, [n for n in nodes if n.cluster_id == c.id], degraded, busy)
        desc = f"{c.node_count} x {c.node_type} in {c.region}"
        components[c.id] = _component(c.id, c.name, status, i, page_id, desc)
    q2 = sa.select(health_tables.Incident).where(
        health_tables.Incident.tenant_id == tenant.id, health_tables.Incident.resolved_at.is_(None)
    )
    incidents = []
    for inc in session.scalars(q2):
        affected = [components[inc.cluster_id]] if inc.cluster_id in components else []
        if (d := _incident(session, inc, page_id, affected, base)) is not None:
            incidents.append(d)
    maintenances = [_maintenance(w, now, page_id, components[w.cluster_id]) for w in windows]
    url = f"{base}/v1/status/tenants/{tenant.id}/summary.json"
    return _summary(
        _page(page_id, f"{tenant.display_name} on Velyrix", url, now),
        list(components.values()),
        incidents,
        maintenances,
    )
