"""Server-sent events of a cluster page (``text/event-stream``): an ``status`` event carrying the
cluster's status fragment (phase, conditions, recent events, the acceptance report's link once there is
one) each time the cluster's row changes (its ``version``) or its report appears, read through the
principal's scope. The htmx SSE extension swaps it into the page.

The stream gives its request's database connection and slot back before streaming; each poll reads on
a short connection of its own, first checking that the session still stands (a revoked or expired
session ends the stream). A stream lasts at most ``MAX_STREAM_S``; the browser's EventSource reconnects."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from velyrix import errors
from velyrix.console import access, render
from velyrix.controlplane.api import pool
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models
from velyrix.controlplane.identity import sessions
from velyrix.controlplane.scoping import Scope

router = APIRouter(include_in_schema=False)
POLL_S = 1.0
"""Seconds between two reads of the cluster's row (wall clock; the twin's clock may run faster)."""
MAX_STREAM_S = 600.0
"""Seconds one stream lasts before the server closes it (EventSource then reconnects)."""


def _read(engine: Any, secret: str, cluster_id: str, report_known: bool) -> tuple[Any, bool]:
    """The cluster's row if the session still stands and may see it, and whether it has a signed
    acceptance report (looked up while ``report_known`` is false: a report, once written, stays); raises
    the refusal otherwise."""
    with engine.connect() as conn:
        principal: Principal = sessions.authenticate(conn, secret)
        principal.require("clusters:read")
        scope = Scope(None, principal, connection=conn)
        row = scope.read(models.Cluster, cluster_id, "cluster")
        if not report_known:
            table = models.AcceptanceReport
            found = scope.select(table).where(table.cluster_id == row.id).limit(1)
            report_known = conn.execute(found).first() is not None
        return row, report_known


def fragment(cluster: Any, has_report: bool) -> str:
    """The cluster page's status section: phase, conditions, events, phase history, and the link to the
    signed acceptance report once there is one (``templates/cluster_status.html``)."""
    return render.ENV.get_template("cluster_status.html").render(cluster=cluster, has_report=has_report)


def event(name: str, html: str) -> str:
    """One SSE message: ``event: name`` and ``html`` as its data lines (``data:`` per line)."""
    lines = "".join(f"data: {line}\n" for line in html.splitlines() or [""])
    return f"event: {name}\n{lines}\n"


async def _release(request: Request) -> None:
    """Give the request's connection, session and database slot back (the stream outlives them)."""
    state = request.scope["state"]
    for key in ("db", "conn"):
        resource = state.pop(key, None)
        if resource is not None:
            await run_in_threadpool(resource.close)
    slot = state.pop("db_slot", None)
    if slot is not None:
        pool.Gate.release(slot)


@router.get("/console/clusters/{cluster_id}/stream", name="console.cluster_stream")
async def stream(cluster_id: str, request: Request, ctx: Ctx = Depends(access.reads("clusters:read"))) -> Any:
    """The cluster's status fragment as an SSE ``status`` event at start and on every change."""
    await ctx.read(lambda scope: scope.read(models.Cluster, cluster_id, "cluster"))  # 404 before a stream
    await _release(request)
    engine = request.app.state.engine
    secret = request.cookies.get(sessions.COOKIE) or ""

    async def messages() -> AsyncIterator[str]:
        seen: tuple[int, bool] | None = None
        has_report = False
        loop = asyncio.get_running_loop()
        ends = loop.time() + MAX_STREAM_S
        while loop.time() < ends and not await request.is_disconnected():
            try:
                row, has_report = await run_in_threadpool(_read, engine, secret, cluster_id, has_report)
            except errors.VelyrixError:
                yield event("ended", "signed out or gone")
                return
            if (row.version, has_report) != seen:
                seen = (row.version, has_report)
                yield event("status", fragment(row, has_report))
            await asyncio.sleep(POLL_S)

    headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
    return StreamingResponse(messages(), media_type="text/event-stream", headers=headers)
