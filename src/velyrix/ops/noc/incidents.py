"""Incidents on the control plane's database: each ``incidents`` row gets its lifecycle
(``db.models.noc.IncidentState``) and timeline (``db.models.noc.IncidentEvent``); actions go through
``lifecycle.transition`` / ``lifecycle.note``; ``sweep`` sends the pages escalation makes due. The caller
commits (with its audit event)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane import scoping
from velyrix.controlplane.db import health_tables
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.ops.noc import escalation, lifecycle
from velyrix.ops.noc import states as s

ACTIONS: dict[str, str | None] = {
    "ack": s.ACKNOWLEDGED,
    "mitigate": s.MITIGATED,
    "resolve": s.RESOLVED,
    "postmortem": s.POSTMORTEM,
    "reopen": s.OPEN,
    "note": None,
}
"""What an operator may do to an incident: the state it moves to (``note``: none, an update)."""

Pager = Callable[[str, dict[str, Any]], None]
"""Sends one page: (target such as ``email:noc@x``, the page's content)."""


def state_of(session: orm.Session, incident: health_tables.Incident) -> models_noc.IncidentState:
    """The lifecycle row of ``incident``, created (``open``, with an ``opened`` timeline entry) the first
    time it is needed: incidents opened by the control plane's remediation have none yet."""
    row = session.scalar(sa.select(models_noc.IncidentState).where(models_noc.IncidentState.incident_id == incident.id))
    if row is not None:
        return row
    from velyrix.ops.sla import contract_store

    terms = contract_store.contract_for(session, incident.tenant_id) if incident.tenant_id else None
    row = models_noc.IncidentState(
        incident_id=incident.id,
        tenant_id=incident.tenant_id,
        number=incident.number,
        state=s.RESOLVED if incident.resolved_at else s.OPEN,
        opened_at=incident.opened_at,
        resolved_at=incident.resolved_at,
        escalation_policy=terms.escalation_policy if terms else "default",
    )
    session.add(row)
    entry = lifecycle.TimelineEntry("opened", incident.opened_at, "velyrix", incident.title)
    record(session, incident, entry)
    session.flush()
    return row


def record(session: orm.Session, incident: health_tables.Incident, entry: lifecycle.TimelineEntry) -> None:
    session.add(
        models_noc.IncidentEvent(
            incident_id=incident.id,
            tenant_id=incident.tenant_id,
            at=entry.at,
            kind=entry.kind,
            actor=entry.actor,
            text=entry.text[:4000],
            detail=entry.detail,
        )
    )


def act(
    session: orm.Session, incident: health_tables.Incident, action: str, *, actor: str, text: str, at: dt.datetime
) -> models_noc.IncidentState:
    """Apply ``action`` (a key of ``ACTIONS``) to ``incident`` at ``at``; records the timeline entry."""
    if action not in ACTIONS:
        raise errors.UnknownNameError("incident action", action, ACTIONS)
    row = state_of(session, incident)
    to_state = ACTIONS[action]
    if to_state is None:
        entry = lifecycle.note(row, actor=actor, text=text, at=at)
    else:
        entry = lifecycle.transition(row, to_state, actor=actor, reason=text or action, at=at)
        if action == "ack":
            row.owner = actor
        if action == "postmortem":
            row.postmortem = text
        incident.resolved_at = row.resolved_at
    record(session, incident, entry)
    session.flush()
    return row


def timeline(session: orm.Session, incident_id: str) -> list[models_noc.IncidentEvent]:
    """The incident's timeline, oldest first."""
    q = sa.select(models_noc.IncidentEvent).where(models_noc.IncidentEvent.incident_id == incident_id)
    return sorted(session.scalars(q), key=lambda e: (e.at, e.id))


def _update_every_min(session: orm.Session, incident: health_tables.Incident) -> int:
    from velyrix.ops.sla import contract_store

    terms = contract_store.contract_for(session, incident.tenant_id) if incident.tenant_id else None
    target = (terms.response if terms else {}).get(incident.priority)
    return target.update_every_min if target else 30


def sweep(session: orm.Session, now: dt.datetime, pager: Pager, policies: dict[str, Any] | None = None) -> list[str]:
    """Send every page escalation makes due at ``now`` for the active incidents; returns what was sent
    (``INC-00001 P1 level 1 -> email:...``). Pages are recorded on the timeline before the counters move,
    in the caller's transaction. ``policies``: escalation policies that add to the catalog's
    (``escalation.load_overrides``)."""
    sent: list[str] = []
    active = session.scalars(sa.select(health_tables.Incident).where(health_tables.Incident.resolved_at.is_(None)))
    for incident in list(active):
        row = state_of(session, incident)
        if row.state not in s.ACTIVE_STATES:
            continue
        pol = escalation.policy(row.escalation_policy, policies)
        for page in escalation.due(
            pol,
            state=row.state,
            opened_at=row.opened_at,
            pages_sent=row.pages_sent,
            last_level=row.last_level,
            last_update_at=row.last_update_at,
            reescalated_at=row.reescalated_at,
            update_every_min=_update_every_min(session, incident),
            now=now,
        ):
            content = {
                "incident": incident.number,
                "priority": incident.priority,
                "title": incident.title,
                "state": row.state,
                "level": page.level,
                "reason": page.reason,
                "opened_at": row.opened_at.isoformat(),
            }
            for target in page.targets:
                pager(target, content)
                sent.append(f"{incident.number} {incident.priority} level {page.level} -> {target}")
            record(
                session,
                incident,
                lifecycle.TimelineEntry(
                    "page",
                    now,
                    "velyrix/escalation",
                    page.reason,
                    {"targets": list(page.targets), "due_at": page.due_at.isoformat()},
                ),
            )
            row.last_level = max(row.last_level, page.level)
            if page.index >= 0:
                row.pages_sent = page.index + 1
            else:
                row.reescalated_at = now
    session.flush()
    return sent


def summaries(session: orm.Session, cluster_id: str, lo: dt.datetime, hi: dt.datetime) -> list[dict[str, Any]]:
    """The incidents of a cluster opened in ``[lo, hi)``: number, priority, title, times (evidence)."""
    q = sa.select(health_tables.Incident).where(
        health_tables.Incident.cluster_id == cluster_id,
        health_tables.Incident.opened_at >= lo,
        health_tables.Incident.opened_at < hi,
    )
    out = []
    for inc in session.scalars(q):
        row = state_of(session, inc)
        out.append(
            {
                "number": inc.number,
                "priority": inc.priority,
                "title": inc.title,
                "state": row.state,
                "opened_at": row.opened_at.isoformat(),
                "first_response_at": row.first_response_at.isoformat() if row.first_response_at else None,
                "resolved_at": row.resolved_at.isoformat() if row.resolved_at else None,
            }
        )
    return sorted(out, key=lambda d: str(d["opened_at"]))


def open_incident(
    session: orm.Session,
    *,
    key: str,
    priority: str,
    title: str,
    tenant_id: str | None,
    cluster_id: str | None,
    source: str,
    at: dt.datetime,
    detail: str = "",
) -> tuple[health_tables.Incident, bool]:
    """The active incident with ``key``, or a new one: ``(incident, created)``. Used by alert intake."""
    q = sa.select(health_tables.Incident).where(
        health_tables.Incident.key == key, health_tables.Incident.resolved_at.is_(None)
    )
    found = session.scalar(q.limit(1))
    if found is not None:
        return found, False
    taken = session.scalar(sa.select(sa.func.count()).select_from(health_tables.Incident)) or 0
    inc = health_tables.Incident(
        number=f"INC-{int(taken) + 1:05d}",
        key=key,
        priority=priority,
        title=title[:2000],
        tenant_id=tenant_id,
        cluster_id=cluster_id,
        nodes=[],
        detail=detail[:4000],
        opened_at=at,
    )
    session.add(inc)
    session.flush()
    row = state_of(session, inc)
    row.source = source
    return inc, True


def out(incident: health_tables.Incident, row: models_noc.IncidentState) -> dict[str, Any]:
    """An incident with its lifecycle, as the API shows it."""
    return {
        "id": incident.id,
        "number": incident.number,
        "key": incident.key,
        "priority": incident.priority,
        "title": incident.title,
        "tenant_id": incident.tenant_id,
        "cluster_id": incident.cluster_id,
        "nodes": list(incident.nodes),
        "detail": incident.detail,
        "state": row.state,
        "source": row.source,
        "owner": row.owner,
        "opened_at": row.opened_at,
        "acknowledged_at": row.acknowledged_at,
        "first_response_at": row.first_response_at,
        "last_update_at": row.last_update_at,
        "mitigated_at": row.mitigated_at,
        "resolved_at": row.resolved_at,
        "postmortem": row.postmortem,
        "pages_sent": row.pages_sent,
    }


def api_page(
    scope: scoping.Scope, *, filters: dict[str, Any], state: str | None, cursor: str | None, limit: int
) -> tuple[list[dict[str, Any]], str | None]:
    """One page of the incidents ``scope`` may see, with their lifecycle (``state`` filters on it)."""
    extra = []
    if state is not None:
        if state not in s.STATES:
            raise errors.UnknownNameError("incident state", state, s.STATES)
        sub = sa.select(models_noc.IncidentState.incident_id).where(models_noc.IncidentState.state == state)
        extra.append(health_tables.Incident.id.in_(sub))
    rows, nxt = scope.page(health_tables.Incident, filters=filters, cursor=cursor, limit=limit, extra=extra)
    return [out(i, state_of(scope.session, i)) for i in rows], nxt


def api_get(scope: scoping.Scope, incident_id: str) -> dict[str, Any]:
    """One incident ``scope`` may see, with its lifecycle and timeline (404 otherwise)."""
    incident = scope.get(health_tables.Incident, incident_id, "incident")
    data = out(incident, state_of(scope.session, incident))
    data["timeline"] = [
        {"at": e.at, "kind": e.kind, "actor": e.actor, "text": e.text, "detail": e.detail}
        for e in timeline(scope.session, incident.id)
    ]
    return data


def api_act(scope: scoping.Scope, incident_id: str, action: str, text: str, at: dt.datetime) -> dict[str, Any]:
    """``act`` on an incident ``scope`` may see, as its principal; returns ``api_get``'s view."""
    incident = scope.get(health_tables.Incident, incident_id, "incident")
    act(scope.session, incident, action, actor=scope.principal.actor, text=text, at=at)
    return api_get(scope, incident_id)
