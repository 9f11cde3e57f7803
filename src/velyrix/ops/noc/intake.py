"""Alert intake: Alertmanager webhooks (payload version 4) become incidents.

One incident per active Alertmanager group (``key`` = ``alertmanager:<groupKey>``). Alertmanager retries a
delivery answered 5xx and re-sends a group every ``repeat_interval``, so intake is idempotent: an alert is
recorded on the timeline once per (fingerprint, status, startsAt), and a group posted again changes
nothing. ``truncatedAlerts`` is honoured: the alerts Alertmanager left out never appear in a payload, so
the group's own ``status`` decides (never the visible list), and the count is recorded. When the whole
group clears (``status: resolved``) the incident becomes ``mitigated``; firing again reopens it.

Labels are evidence, not orders: ``severity`` maps to a priority through ``SEVERITIES``; a ``cluster``
label names a tenant only when it is the id of an existing cluster (the incident then belongs to that
cluster's tenant); anything else leaves the incident to the provider.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db import health_tables, models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.ops.noc import incidents, lifecycle
from velyrix.ops.noc import states as s

SEVERITIES: dict[str, str] = {"critical": "P1", "page": "P1", "error": "P2", "major": "P2", "warning": "P3"}
"""Alert ``severity`` label -> incident priority (anything else: P4)."""
ACTOR = "alertmanager"


def _texts(session: orm.Session, incident_id: str, kind: str) -> set[str]:
    q = sa.select(models_noc.IncidentEvent.text).where(
        models_noc.IncidentEvent.incident_id == incident_id, models_noc.IncidentEvent.kind == kind
    )
    return set(session.scalars(q))


def _seen(session: orm.Session, incident_id: str) -> set[str]:
    """The marks of the alerts already on the incident's timeline."""
    return _texts(session, incident_id, "alert")


def _notes(session: orm.Session, incident_id: str) -> set[str]:
    return _texts(session, incident_id, "note")


def _owner(session: orm.Session, labels: dict[str, str]) -> tuple[str | None, str | None]:
    cluster_id = labels.get("cluster")
    cluster = session.get(models.Cluster, cluster_id) if cluster_id else None
    return (cluster.tenant_id, cluster.id) if cluster else (None, None)


def alertmanager(session: orm.Session, payload: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    """Apply one webhook ``payload`` (validated by the route); returns what changed. Caller commits."""
    common = payload.get("commonLabels") or {}
    key = f"alertmanager:{payload['groupKey']}"[:200]
    firing = payload["status"] == "firing"
    active = session.scalar(
        sa.select(health_tables.Incident).where(
            health_tables.Incident.key == key, health_tables.Incident.resolved_at.is_(None)
        )
    )
    if active is None and not firing:
        return {"incident": None, "changed": False, "new_alerts": 0}
    created = False
    if active is None:
        tenant_id, cluster_id = _owner(session, common)
        title = (payload.get("commonAnnotations") or {}).get("summary") or common.get("alertname", "alert")
        active, created = incidents.open_incident(
            session,
            key=key,
            priority=SEVERITIES.get(common.get("severity", ""), "P4"),
            title=str(title),
            tenant_id=tenant_id,
            cluster_id=cluster_id,
            source="alertmanager",
            at=now,
            detail=f"receiver {payload.get('receiver', '')}; group {payload.get('groupLabels', {})}",
        )
    row = incidents.state_of(session, active)
    seen = _seen(session, active.id)
    new = 0
    for alert in payload["alerts"]:
        mark = f"{alert.get('fingerprint', '')} {alert['status']} {alert.get('startsAt', '')}"
        if mark in seen:
            continue
        seen.add(mark)
        new += 1
        name = (alert.get("labels") or {}).get("alertname", "")
        incidents.record(
            session,
            active,
            lifecycle.TimelineEntry("alert", now, ACTOR, mark, {"alertname": name, "labels": alert.get("labels", {})}),
        )
    if payload.get("truncatedAlerts"):
        # Said once per count: also when the group grows past max_alerts after the delivery that opened it.
        text = f"{payload['truncatedAlerts']} more alerts of the group truncated by Alertmanager (max_alerts)"
        if text not in _notes(session, active.id):
            incidents.record(session, active, lifecycle.TimelineEntry("note", now, ACTOR, text))
    changed = created or new > 0
    if not firing and row.state in (s.OPEN, s.ACKNOWLEDGED):
        incidents.act(session, active, "mitigate", actor=ACTOR, text="alert group resolved", at=now)
        changed = True
    elif firing and row.state == s.MITIGATED:
        incidents.act(session, active, "reopen", actor=ACTOR, text="alert group firing again", at=now)
        changed = True
    session.flush()
    return {"incident": active.number, "incident_id": active.id, "changed": changed, "new_alerts": new}
