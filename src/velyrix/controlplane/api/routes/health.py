"""``/healthz`` (the process answers) and ``/readyz`` (the database answers and its schema is current)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from velyrix.controlplane.api import schemas
from velyrix.controlplane.db import migrate

router = APIRouter(tags=["health"])


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
    try:
        revision = migrate.current(request.app.state.engine)
    except Exception as exc:  # any failure means not ready
        return JSONResponse({"status": "unavailable", "database": type(exc).__name__}, status_code=503)
    ready = revision == request.app.state.schema_head
    return JSONResponse(
        {"status": "ok" if ready else "unavailable", "database": "ok", "schema_revision": revision},
        status_code=200 if ready else 503,
    )
