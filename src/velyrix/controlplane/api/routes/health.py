"""``/healthz`` (the process answers: on the event loop, no database, no thread) and ``/readyz`` (the
database answers within ``READY_TIMEOUT_S``, its schema is current and, for SQLite, its disk has room to
write)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from velyrix.controlplane.api import schemas
from velyrix.controlplane.db import migrate

router = APIRouter(tags=["health"])
RETRY_AFTER = {"Retry-After": "5"}
READY_TIMEOUT_S = 2.0
"""Seconds ``/readyz`` waits for the database before it answers 503."""
_LIVE = b'{"status":"ok"}'


@router.get("/healthz", name="health.live", response_model=schemas.Health, response_model_exclude_none=True)
async def healthz() -> Response:
    """Liveness: no database, no authentication, no worker thread (it answers while the pool is busy)."""
    return Response(_LIVE, media_type="application/json")


@router.get(
    "/readyz",
    name="health.ready",
    response_model=schemas.Health,
    responses={503: {"model": schemas.Health, "description": "database unreachable or not migrated"}},
)
async def readyz(request: Request) -> JSONResponse:
    """Readiness: the database answers within ``READY_TIMEOUT_S`` and is at the newest migration."""
    try:
        revision, full = await asyncio.wait_for(
            run_in_threadpool(migrate.readiness, request.app.state.engine), READY_TIMEOUT_S
        )
    except TimeoutError:
        return JSONResponse(
            {"status": "unavailable", "database": f"no answer within {READY_TIMEOUT_S:g} s"},
            status_code=503,
            headers=RETRY_AFTER,
        )
    except Exception as exc:  # any failure means not ready
        return JSONResponse(
            {"status": "unavailable", "database": type(exc).__name__}, status_code=503, headers=RETRY_AFTER
        )
    ready = revision == request.app.state.schema_head and not full
    return JSONResponse(
        {
            "status": "ok" if ready else "unavailable",
            "database": "disk full" if full else "ok",
            "schema_revision": revision,
        },
        status_code=200 if ready else 503,
        headers=None if ready else RETRY_AFTER,
    )
