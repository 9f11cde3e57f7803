"""The FastAPI application factory: the one place where every router of the API is mounted (``ROUTERS``).

``velyrix.ops.service.create_app`` composes this app with the ops layer (remediation of node reports);
``FleetRuntime.attach`` only hands it the running fleet (``app.state.fleet``), it mounts nothing."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import sqlalchemy as sa
from fastapi import APIRouter, FastAPI
from sqlalchemy import orm

import velyrix
from velyrix import settings
from velyrix.controlplane import audit
from velyrix.controlplane.api import (
    access_log,
    context,
    docs_ui,
    edge,
    inline,
    inline_pg,
    pool,
    problems,
    response_cap,
    route_index,
)
from velyrix.controlplane.api.routes import (
    acceptance,
    api_keys,
    audit_events,
    audit_log,
    clusters,
    customer_keys,
    evidence,
    fabric_config,
    health,
    identity_policy,
    identity_providers,
    node_health,
    nodes,
    physical_access,
    regions,
    scheduler,
    sim,
    tenants,
    users,
    volume_data,
    volumes,
)
from velyrix.controlplane.audit import checkpoints
from velyrix.controlplane.db import engine as engine_mod
from velyrix.controlplane.db import migrate as migrate_mod
from velyrix.controlplane.db import pooling
from velyrix.controlplane.identity import mfa_web, saml_web, scim, tls, verified, web

ROUTERS = (
    health.router,
    tenants.router,
    api_keys.router,
    clusters.router,
    nodes.router,
    volumes.router,
    regions.router,
    audit_events.router,
    acceptance.router,
    sim.router,
    audit_log.router,
    evidence.router,
    physical_access.router,
    node_health.router,
    identity_providers.router,
    identity_policy.router,
    customer_keys.router,
    volume_data.router,
    fabric_config.router,
    scheduler.router,
    users.router,
)
BROWSER_ROUTERS = (web.router, saml_web.router, mfa_web.router, scim.router)
"""Sign-in pages and SCIM (``velyrix.controlplane.identity``): outside the /v1 OpenAPI document."""


def _mount_order() -> tuple[APIRouter, ...]:
    """Every router, in the order requests are matched against them (a scan, route by route): the
    health probes first, then the signed-in pages (``/ui``, ``/auth``), then ``/v1``, MFA and SCIM.
    Behind the 80-odd ``/v1`` routes, matching alone doubled the work of a ``GET /ui``
    (bench/bench_identity.py)."""
    rest = tuple(r for r in ROUTERS if r is not health.router)
    return (health.router, web.router, *rest, saml_web.router, mfa_web.router, scim.router)


def create_app(database_url: str | None = None, *, engine: sa.Engine | None = None, migrate: bool = True) -> FastAPI:
    """The control-plane API on ``database_url`` (default: ``velyrix.settings``), or on ``engine``.

    ``migrate`` applies the packaged Alembic migrations first (idempotent).
    """
    engine = engine if engine is not None else engine_mod.make_engine(database_url)
    if migrate:
        migrate_mod.upgrade(engine=engine, url=str(engine.url))
    app = FastAPI(
        title="Velyrix control plane",
        version=getattr(velyrix, "__version__", "0"),
        description="Tenants, scoped API keys, clusters (spec, plan, status), nodes, volumes, regions and "
        "audit events. Authenticate with `Authorization: Bearer vlx_...`. Errors are RFC 9457 "
        "problem+json with a stable `code`.",
        docs_url=None,  # served from the package by docs_ui (no CDN), below
        redoc_url=None,  # ReDoc loads its script from a CDN: left out rather than blank offline
    )
    docs_ui.install(app)
    app.state.engine = engine
    app.state.sessionmaker = orm.sessionmaker(engine, expire_on_commit=False)
    app.state.schema_head = migrate_mod.head()
    app.state.db_shared = engine.dialect.name == "sqlite"  # one connection per request: see context.require
    app.state.inline_reader = inline.reader_for(engine)  # SQLite: reads on the event loop (api/inline.py)
    app.state.inline_pg = inline_pg.reader_for(engine)  # PostgreSQL: reads awaited on the loop (api/inline_pg.py)
    inline_reads = app.state.inline_reader is not None or app.state.inline_pg is not None
    app.state.principal_cache = verified.for_engine(engine) if inline_reads else None
    configured = settings.load()
    sizes = pooling.config(engine.dialect.name, configured.database)
    app.state.db_gate = pool.Gate(pooling.slots_of(engine, sizes), sizes.wait_s)
    app.state.access_log = access_log.AccessLog(configured.api.access_log)
    app.state.fleet = None  # a FleetRuntime (twin, reconcilers) once attached: ``velyrix up``
    app.state.report_handler = None  # acts on node reports' verdicts; composed in by velyrix.ops.service
    app.state.refusal_shapes = {}  # path prefix -> (status, message) -> Response: another protocol's error shape
    for router in _mount_order():
        app.include_router(router)
    route_index.install(app)  # routers a path cannot reach are skipped (api/route_index.py)
    _declare_bearer(app)
    problems.install(app)
    _audit_checkpoints(app)
    app.add_middleware(response_cap.ResponseCapMiddleware)  # list pages cut under 4 MiB (docs/api-limits.md)
    app.add_middleware(edge.EdgeMiddleware, refuse=_refuse)  # inside: the request id is set first
    app.add_middleware(context.RequestIdMiddleware)
    app.add_middleware(tls.HstsMiddleware)  # HSTS on answers over TLS (velyrix server --tls-cert)
    return app


def _declare_bearer(app: FastAPI) -> None:
    """The OpenAPI document states the bearer scheme on every operation whose route declares
    ``context.require`` (read from the header by ``require`` itself, not by a nested dependency)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        secured = {
            (route.path_format, method)
            for route in route_index.effective_routes(app)
            if _requires_key(route.dependant)
            for method in route.methods or ()
        }
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                if (path, method.upper()) in secured:
                    operation["security"] = [dict.fromkeys(context.BEARER_SCHEME, [])]
        if secured:
            schema.setdefault("components", {}).setdefault("securitySchemes", {}).update(context.BEARER_SCHEME)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _requires_key(dependant: Any) -> bool:
    todo = [dependant]
    while todo:
        found = todo.pop()
        if found is None:
            continue
        if getattr(found.call, "required_scope", None) is not None:
            return True
        todo.extend(found.dependencies)
    return False


def _audit_checkpoints(app: FastAPI) -> None:
    """Sequence audit events into the Merkle log; publish a checkpoint at start and at every interval."""
    audit.log.install()
    publisher = checkpoints.Publisher(app.state.sessionmaker, checkpoints.interval_s())
    app.state.audit_checkpoints = publisher

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        publisher.tick()
        publisher.start()
        if _app.state.inline_pg is not None:
            await _app.state.inline_pg.start()
        try:
            yield
        finally:
            publisher.stop()
            if _app.state.inline_reader is not None:
                _app.state.inline_reader.close()
            if _app.state.inline_pg is not None:
                await _app.state.inline_pg.close()

    app.router.lifespan_context = lifespan


async def _refuse(request: Any, exc: Any) -> Any:
    """A refusal of the validation edge: problem+json (and its audit event, ``problems.refuse``); on the SCIM
    endpoints the same status in SCIM's own Error message shape (RFC 7644 section 3.12), as SCIM clients expect."""
    response = await problems.refuse(request, exc)
    for prefix, shape in request.app.state.refusal_shapes.items():
        if request.url.path.startswith(prefix):
            return shape(response.status_code, exc.message)
    if not request.url.path.startswith(scim.PREFIX):
        return response
    scim_type = "tooMany" if response.status_code == 413 else None
    scim_response = scim.error_response(response.status_code, exc.message, scim_type)
    for name in ("Retry-After", "X-Request-ID"):
        if name in response.headers:
            scim_response.headers[name] = response.headers[name]
    return scim_response
