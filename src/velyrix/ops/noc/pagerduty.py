"""PagerDuty Events API v2 intake: ``trigger`` / ``acknowledge`` / ``resolve`` events become NOC incidents.

A sender authenticates with the event's ``routing_key``: the key of an ``EventIntegration`` that the
provider's NOC created for one service (of a tenant's cluster, a tenant, or the provider itself). The
incident's key is ``pagerduty:<integration id>:<dedup_key>``, so two integrations never share incidents
and a tenant's integration never touches another tenant's. Events v2 semantics:

- ``trigger`` opens the incident of its ``dedup_key`` (one is generated when absent, and returned), or
  adds to the active one (each distinct summary/severity once on its timeline; a higher severity raises
  the priority; a mitigated incident reopens);
- ``acknowledge`` acknowledges an open incident, ``resolve`` resolves an active one; either for a
  ``dedup_key`` with no active incident changes nothing (answered 202, as PagerDuty does).

Validation follows the Events v2 reference (field names, required fields, 32-character routing key,
``dedup_key`` at most 255 characters, ``summary`` at most 1024, severity ``critical|error|warning|info``);
what is wrong is listed in the answer's ``errors``. Severity -> priority: ``SEVERITIES``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import health_tables, models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.ops.noc import incidents, lifecycle
from velyrix.ops.noc import states as s

ROUTING_KEY_LEN = 32
"""PagerDuty's integration keys are 32 characters; senders and their libraries check the length."""
MAX_DEDUP_KEY = 255
MAX_SUMMARY = 1024
MAX_EVENT_BYTES = 512 * 1024
"""PagerDuty Events v2: an event is at most 512 KB."""
ACTIONS = ("trigger", "acknowledge", "resolve")
SEVERITIES: dict[str, str] = {"critical": "P1", "error": "P2", "warning": "P3", "info": "P4"}
"""Events v2 ``payload.severity`` -> incident priority (the inverse of ``paging.PD_SEVERITY``)."""
INTEGRATION_ROLE = "integration"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_integration(
    session: orm.Session, *, service: str, tenant_id: str | None, cluster_id: str | None, created_by: str
) -> tuple[models.EventIntegration, str]:
    """A new integration and its routing key (32 hex characters; shown once, only its SHA-256 kept). A
    ``cluster_id`` gives the integration that cluster's tenant; a ``tenant_id`` that disagrees is refused."""
    if cluster_id is not None:
        cluster = session.get(models.Cluster, cluster_id)
        if cluster is None:
            raise errors.NotFoundError(kind="cluster", name=cluster_id)
        if tenant_id is not None and tenant_id != cluster.tenant_id:
            raise errors.InvalidInputError("cluster_id belongs to another tenant than tenant_id")
        tenant_id = cluster.tenant_id
    elif tenant_id is not None and session.get(models.Tenant, tenant_id) is None:
        raise errors.NotFoundError(kind="tenant", name=tenant_id)
    key = secrets.token_hex(ROUTING_KEY_LEN // 2)
    row = models.EventIntegration(
        service=service,
        tenant_id=tenant_id,
        cluster_id=cluster_id,
        key_sha256=_digest(key),
        key_prefix=key[:8],
        created_by=created_by,
    )
    session.add(row)
    session.flush()
    return row, key


def integration_out(row: models.EventIntegration) -> dict[str, Any]:
    return {
        "id": row.id,
        "service": row.service,
        "tenant_id": row.tenant_id,
        "cluster_id": row.cluster_id,
        "key_prefix": row.key_prefix,
        "created_at": row.created_at,
        "revoked_at": row.revoked_at,
    }


def integration_of(session: orm.Session, routing_key: str) -> models.EventIntegration | None:
    """The unrevoked integration whose routing key is ``routing_key``, else None."""
    q = sa.select(models.EventIntegration).where(
        models.EventIntegration.key_sha256 == _digest(routing_key), models.EventIntegration.revoked_at.is_(None)
    )
    return session.scalar(q)


def principal_of(row: models.EventIntegration) -> principals.Principal:
    """Who the audit log names for an event sent with ``row``'s key (``key:evi_... (pagerduty:SERVICE)``)."""
    return principals.Principal(
        key_id=row.id,
        name=f"pagerduty:{row.service}",
        tenant_id=None,
        role=INTEGRATION_ROLE,
        scopes=frozenset({"incidents:write"}),
    )


def _text(event: dict[str, Any], name: str, limit: int, problems: list[str], *, required: bool) -> None:
    value = event.get(name)
    if value is None:
        if required:
            problems.append(f"'{name}' is missing or blank")
    elif not isinstance(value, str) or (required and not value.strip()):
        problems.append(f"'{name}' must be a non-blank string")
    elif len(value) > limit:
        problems.append(f"Length of '{name}' is {len(value)}, more than {limit} characters")


def validate(event: Any) -> list[str]:
    """What is wrong with ``event`` (a decoded JSON body), in Events v2's terms; empty when valid."""
    if not isinstance(event, dict):
        return ["Event object must be a JSON object"]
    problems: list[str] = []
    key = event.get("routing_key")
    if not isinstance(key, str) or len(key) != ROUTING_KEY_LEN:
        problems.append(f"Length of 'routing_key' is incorrect (should be {ROUTING_KEY_LEN} characters)")
    action = event.get("event_action")
    if action not in ACTIONS:
        problems.append("'event_action' is invalid (must be one of trigger, acknowledge, resolve)")
    _text(event, "dedup_key", MAX_DEDUP_KEY, problems, required=action in ("acknowledge", "resolve"))
    if action == "trigger":
        payload = event.get("payload")
        if not isinstance(payload, dict):
            return [*problems, "'payload' is missing or not an object"]
        _text(payload, "summary", MAX_SUMMARY, problems, required=True)
        _text(payload, "source", MAX_SUMMARY, problems, required=True)
        if payload.get("severity") not in SEVERITIES:
            problems.append("'payload.severity' is invalid (must be one of critical, error, warning, info)")
        details = payload.get("custom_details")
        if details is not None and not isinstance(details, dict | str):
            problems.append("'payload.custom_details' must be an object or a string")
    return problems


def _incident_key(row: models.EventIntegration, dedup_key: str) -> str:
    tail = dedup_key if len(dedup_key) <= 150 else "sha256:" + _digest(dedup_key)
    return f"pagerduty:{row.id}:{tail}"


def _active(session: orm.Session, key: str) -> health_tables.Incident | None:
    q = sa.select(health_tables.Incident).where(
        health_tables.Incident.key == key, health_tables.Incident.resolved_at.is_(None)
    )
    return session.scalar(q.limit(1))


def _trigger(
    session: orm.Session, row: models.EventIntegration, key: str, event: dict[str, Any], actor: str, now: dt.datetime
) -> tuple[health_tables.Incident, bool]:
    payload = event["payload"]
    priority = SEVERITIES[payload["severity"]]
    incident, changed = incidents.open_incident(
        session,
        key=key,
        priority=priority,
        title=payload["summary"],
        tenant_id=row.tenant_id,
        cluster_id=row.cluster_id,
        source="pagerduty",
        at=now,
        detail=f"service {row.service}; source {payload['source']}",
    )
    mark = f"{payload['severity']} {payload['summary']}"
    q = sa.select(models_noc.IncidentEvent.text).where(
        models_noc.IncidentEvent.incident_id == incident.id, models_noc.IncidentEvent.kind == "alert"
    )
    if mark not in set(session.scalars(q)):
        detail = {"source": payload["source"], "component": payload.get("component"), "class": payload.get("class")}
        incidents.record(session, incident, lifecycle.TimelineEntry("alert", now, actor, mark, detail))
        changed = True
    if priority < incident.priority:  # "P1" < "P2": a worse severity raises the priority
        incident.priority, changed = priority, True
    if incidents.state_of(session, incident).state == s.MITIGATED:
        incidents.act(session, incident, "reopen", actor=actor, text="triggered again", at=now)
        changed = True
    return incident, changed


def apply(
    session: orm.Session, row: models.EventIntegration, event: dict[str, Any], now: dt.datetime
) -> dict[str, Any]:
    """Apply one valid ``event`` (``validate`` found nothing) sent with ``row``'s key; the caller commits.
    Returns ``dedup_key``, the incident's number (None when nothing matched) and whether anything changed."""
    actor = principal_of(row).actor
    dedup_key = event.get("dedup_key") or uuid.uuid4().hex
    key = _incident_key(row, dedup_key)
    action = event["event_action"]
    changed = False
    if action == "trigger":
        incident: health_tables.Incident | None
        incident, changed = _trigger(session, row, key, event, actor, now)
    else:
        incident = _active(session, key)
        if incident is not None:
            state = incidents.state_of(session, incident).state
            if action == "acknowledge" and state == s.OPEN:
                incidents.act(session, incident, "ack", actor=actor, text="acknowledged by the sender", at=now)
                changed = True
            elif action == "resolve" and state in s.ACTIVE_STATES:
                incidents.act(session, incident, "resolve", actor=actor, text="resolved by the sender", at=now)
                changed = True
    session.flush()
    return {"dedup_key": dedup_key, "incident": incident.number if incident else None, "changed": changed}
