"""The console's audit log: the tenant's audit events (console events among them: action ``console.*``)
filtered by action (exact, or a prefix ending in ``*``), actor, outcome and time range, a page at a time,
through the API's own route (``audit_events.list_events``); and ``/console/audit/verify``, the
tamper-evident log checked as ``velyrix audit verify`` checks it: the leaves the tenant may see
(``audit_log.entries``), each of its own events recomputed into its leaf hash, and the tree's root compared
with a signed checkpoint of the whole log (``audit.queries.covering``), its signature checked against the
server's audit key (``controlplane.audit.verify``)."""

from __future__ import annotations

import datetime as dt
import urllib.parse
from typing import Any

import pydantic
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from velyrix.console import access, render
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.api.routes import audit_events, audit_log
from velyrix.controlplane.audit import checkpoints, listing, queries, verify

router = APIRouter(include_in_schema=False)
PAGE = 50
OUTCOMES = ("success", "denied", "error")
MAX_VERIFY_LEAVES = 50_000
"""Leaves the page checks at most (beyond: ``velyrix audit verify``, which has no such limit)."""
_TIME = pydantic.TypeAdapter(dt.datetime)


def _time(value: str, field: str, problems_found: dict[str, str]) -> dt.datetime | None:
    """``value`` (a ``datetime-local`` input or ISO 8601; no zone: UTC) as a time, else None (and why)."""
    if not value.strip():
        return None
    try:
        return _TIME.validate_python(value.strip())
    except pydantic.ValidationError as exc:
        problems_found[field] = f"{exc.errors()[0]['msg']} (e.g. 2026-12-01T19:30, UTC)"
        return None


@router.get("/console/audit", name="console.audit")
def audit_page(
    request: Request,
    ctx: Ctx = Depends(access.reads("audit:read")),
    action: str = Query("", max_length=listing.MAX_FILTER_CHARS),
    actor: str = Query("", max_length=listing.MAX_FILTER_CHARS),
    outcome: str = Query("", max_length=16),
    since: str = Query("", max_length=40),
    until: str = Query("", max_length=40),
    cursor: str = Query("", max_length=61, pattern=f"^$|{schemas.CURSOR_PATTERN}"),
) -> Response:
    """A page of the tenant's audit events (oldest first, like the API), with the filter form; a filter
    that cannot be read is shown beside its field (422)."""
    form = {"action": action, "actor": actor, "outcome": outcome, "since": since, "until": until}
    field_errors: dict[str, str] = {}
    if outcome and outcome not in OUTCOMES:
        field_errors["outcome"] = f"one of {', '.join(OUTCOMES)}"
    start, end = _time(since, "since", field_errors), _time(until, "until", field_errors)
    if start and end and start >= end:
        field_errors["until"] = "must be after since"
    events: list[dict[str, Any]] = []
    nxt = None
    if not field_errors:
        found = audit_events.list_events(
            ctx,
            action=action or None,
            outcome=outcome or None,
            key_id=None,
            request_id=None,
            target=None,
            actor=actor or None,
            since=start,
            until=end,
            cursor=cursor or None,
            limit=PAGE,
        )
        events, nxt = found["items"], found["next_cursor"]
    more = "?" + urllib.parse.urlencode({**{k: v for k, v in form.items() if v}, "cursor": nxt}) if nxt else ""
    return render.page(
        request,
        "admin_audit.html",
        422 if field_errors else 200,
        events=events,
        form=form,
        field_errors=field_errors,
        outcomes=OUTCOMES,
        next_page=more,
        title="Audit log",
    )


def _entries(ctx: Ctx, size: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    start = 0
    while start < size:
        page = audit_log.entries(ctx, start, audit_log.MAX_ENTRIES)
        items.extend(page["items"])
        if page["next_start"] is None:
            break
        start = int(page["next_start"])
    return items


@router.get("/console/audit/verify", name="console.audit_verify")
def audit_verify(request: Request, ctx: Ctx = Depends(access.reads("audit:read"))) -> Response:
    """The log checked against a signed checkpoint of all of it (the latest, or one published now when the
    log grew since): holds, or the first missing or altered event."""
    checkpoint = queries.covering(ctx.scope, int(audit_log.entries(ctx, 0, 1)["tree_size"]))
    size = int(checkpoint["report"]["tree_size"])
    key = checkpoints.public_key()
    result = None
    if size <= MAX_VERIFY_LEAVES:
        result = verify.check(_entries(ctx, size), [checkpoint], key)
    return render.page(
        request,
        "admin_audit_verify.html",
        checkpoint=checkpoint["report"],
        result=result,
        public_key=key,
        most=MAX_VERIFY_LEAVES,
        title="Audit log: verification",
    )
