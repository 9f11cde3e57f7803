"""The audit events a scope may read, filtered as ``GET /v1/audit-events`` and the console's audit page
filter them: ``action`` (exact, or a prefix ending in ``*``: ``console.*``), ``actor`` (a part of it, any
case), ``outcome``, ``key_id``, ``request_id``, ``target`` (exact), and the time range ``since`` (inclusive)
to ``until`` (exclusive; naive datetimes are UTC). Pages in id (= time) order, as every list of the API."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from velyrix.controlplane import scoping
from velyrix.controlplane.db import models

MAX_FILTER_CHARS = 200


@dataclass(frozen=True)
class Filters:
    """What a page of audit events is narrowed to (None: not narrowed)."""

    action: str | None = None
    actor: str | None = None
    outcome: str | None = None
    key_id: str | None = None
    request_id: str | None = None
    target: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None


def _utc(at: dt.datetime) -> dt.datetime:
    return at.replace(tzinfo=dt.UTC) if at.tzinfo is None else at.astimezone(dt.UTC)


def page(
    scope: scoping.Scope, filters: Filters, cursor: str | None, limit: int
) -> tuple[list[models.AuditEvent], str | None]:
    """One page of the events ``scope`` may read that match ``filters``, and the next page's cursor."""
    table = models.AuditEvent
    extra = []
    equal = {"outcome": filters.outcome, "key_id": filters.key_id, "request_id": filters.request_id}
    equal["target"] = filters.target
    if filters.action is not None and filters.action.endswith("*"):
        extra.append(table.action.startswith(filters.action[:-1], autoescape=True))
    else:
        equal["action"] = filters.action
    if filters.actor:
        extra.append(table.actor.icontains(filters.actor, autoescape=True))
    if filters.since is not None:
        extra.append(table.at >= _utc(filters.since))
    if filters.until is not None:
        extra.append(table.at < _utc(filters.until))
    return scope.page(table, filters=equal, cursor=cursor, limit=limit, extra=extra)
