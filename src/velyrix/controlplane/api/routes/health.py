"""``/healthz`` (the process answers) and ``/readyz`` (the database answers, its schema is current and,
for SQLite, its disk has room to write)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from velyrix.controlplane.api import schemas
from velyrix.controlplane.db import engine as engine_mod
from velyrix.controlplane.db import migrate

router = APIRouter(tags=["health"])
RETRY_AFTER = {"Retry-After": "5"}


@router.get("/healthz", name="health.live", response_model=schemas.Health, response_model_exclude_none=True)
def healthz() -> dict[str, str]:
    """Liveness: no database, no authentication."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    name="health.ready",
    response_model=schemas.Health,
    responses={503: {"model": schemas.Health, "description": "database unreachable or not migrated"}},
)
def readyz(request: Request) -> JSONResponse:
    """Readiness: the database answers and is at the newest migration."""
    engine = request.app.state.engine
    try:
        revision = migrate.current(engine)
        full = engine_mod.disk_full(engine)
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
