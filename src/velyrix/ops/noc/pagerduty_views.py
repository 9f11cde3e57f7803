"""The PagerDuty intake's access to the database: integrations through the principal's ``Scope``
(provider keys only), events in their own transaction with their audit event (the sender holds no API key:
its routing key is its credential)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from velyrix import errors
from velyrix.controlplane import audit, scoping
from velyrix.controlplane.db import models
from velyrix.ops.noc import pagerduty

INVALID = "invalid event"


def create(scope: scoping.Scope, service: str, tenant_id: str | None, cluster_id: str | None) -> dict[str, Any]:
    """A new integration (``pagerduty.create_integration``) with its routing key, shown this once."""
    if not scope.principal.is_provider:
        raise errors.PermissionDeniedError(scope="incidents:write")
    row, key = pagerduty.create_integration(
        scope.session, service=service, tenant_id=tenant_id, cluster_id=cluster_id, created_by=scope.principal.actor
    )
    return pagerduty.integration_out(row) | {"routing_key": key}


def page(scope: scoping.Scope, cursor: str | None, limit: int) -> tuple[list[dict[str, Any]], str | None]:
    """Integrations (without their keys), oldest first."""
    if not scope.principal.is_provider:
        raise errors.PermissionDeniedError(scope="incidents:write")
    rows, nxt = scope.page(models.EventIntegration, filters={}, cursor=cursor, limit=limit)
    return [pagerduty.integration_out(r) for r in rows], nxt


def _invalid(problems: list[str], message: str = "Event object is invalid") -> tuple[int, dict[str, Any]]:
    return 400, {"status": INVALID, "message": message, "errors": problems}


def refusal(status: int, message: str) -> JSONResponse:
    """A refusal of the API's validation edge (body not JSON, too large, too deep) in PagerDuty's shape:
    400 ``invalid event`` (413 stays 413, as PagerDuty answers an event over its size limit)."""
    code = 413 if status == 413 else 400
    return JSONResponse({"status": INVALID, "message": "Event object is invalid", "errors": [message]}, code)


def enqueue(app: FastAPI, raw: bytes, info: audit.RequestInfo, now: dt.datetime) -> tuple[int, dict[str, Any]]:
    """One Events v2 request: (HTTP status, PagerDuty's answer). 202 ``success`` with the ``dedup_key``;
    400 ``invalid event`` with ``errors`` for a malformed event or an unknown or revoked routing key."""
    try:
        event = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return _invalid(["Request body is not valid JSON"], "Could not parse request body")
    problems = pagerduty.validate(event)
    if problems:
        return _invalid(problems)
    with app.state.sessionmaker() as session:
        row = pagerduty.integration_of(session, event["routing_key"])
        if row is None:
            return _invalid(["Invalid routing key"])
        done = pagerduty.apply(session, row, event, now)
        audit.record(
            session,
            info,
            pagerduty.principal_of(row),
            action="alerts.pagerduty",
            target=f"alerts/pagerduty/{done['incident'] or '-'}",
            status_code=202,
            detail={"event_action": event["event_action"], "changed": done["changed"]},
            tenant_id=row.tenant_id,
        )
        session.commit()
    return 202, {"status": "success", "message": "Event processed", "dedup_key": done["dedup_key"]}
