"""The control-plane service as it runs: the API (``velyrix.controlplane``) composed with what the ops layer
adds to it (node reports' verdicts carried out by ``remediation.node_reports``). ``velyrix server`` and ``velyrix up``
serve this app; ``create_app`` takes the same arguments as ``velyrix.controlplane.api.create_app``. This is the
composition root: every router of the running service is mounted here (``ROUTERS``, ``KEYED_ROUTERS``), and
no other module mounts routes."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI

from velyrix.console import render as console_render
from velyrix.console import routes as console_routes
from velyrix.console import tenant_billing as console_tenant_billing
from velyrix.controlplane.api import app as controlplane_api
from velyrix.controlplane.api import route_index
from velyrix.ops import access_routes, connectivity_routes, node_actions, twin_routes
from velyrix.ops.billing import routes as billing_routes
from velyrix.ops.billing import views as billing_views
from velyrix.ops.noc import intake_routes, pagerduty_routes, pagerduty_views, statuspage_routes
from velyrix.ops.noc import routes as noc_routes
from velyrix.ops.rollouts import routes as rollout_routes

OPS_ROUTERS: tuple[APIRouter, ...] = (
    noc_routes.router,
    intake_routes.router,
    pagerduty_routes.router,
    statuspage_routes.router,
    billing_routes.router,
    twin_routes.router,
    access_routes.router,
    connectivity_routes.router,
    rollout_routes.router,
    rollout_routes.sim_router,
    node_actions.router,
)
"""Routers the ops layer adds (NOC incidents; billing, SLA contracts and reports; the twin's node telemetry and
proactive report, which answer 409 ``no_twin`` until a twin is attached: ``velyrix up``)."""

ROUTERS: tuple[APIRouter, ...] = (*controlplane_api.ROUTERS, *OPS_ROUTERS)
"""Every router of the service as it runs (the authorization matrix is built from this table)."""

KEYED_ROUTERS: tuple[APIRouter, ...] = (pagerduty_routes.ENQUEUE_ROUTER, statuspage_routes.PUBLIC_ROUTER)
"""Routers without a bearer key, outside the authorization matrix: PagerDuty Events v2 (the ``routing_key``
in the body is the credential; tests/noc/test_pagerduty.py) and the public region status pages
(tests/noc/test_statuspage.py)."""

CONSOLE_ROUTERS: tuple[APIRouter, ...] = console_routes.ROUTERS
"""The web console's pages and form posts (``velyrix.console``), outside the OpenAPI document; its leak
test (tests/console/test_console_leaks.py) is built from this table."""


def create_app(*args: Any, noc_sweep_s: float = 0.0, **kwargs: Any) -> FastAPI:
    """``velyrix.controlplane.api.create_app(*args, **kwargs)`` with the remediation of node reports, the
    ops routes, and (``noc_sweep_s`` > 0) the escalation sweeper every ``noc_sweep_s`` seconds."""
    from velyrix.controlplane.api import create_app as controlplane_app
    from velyrix.ops.remediation import node_reports

    app = node_reports.install(controlplane_app(*args, **kwargs))
    for router in (*OPS_ROUTERS, *KEYED_ROUTERS, *CONSOLE_ROUTERS):
        app.include_router(router)
    route_index.install(app)
    console_render.install(app)
    setattr(app.state, console_tenant_billing.SLA_REPORT, billing_views.report)  # the console's SLA reports
    app.state.refusal_shapes[pagerduty_routes.ENQUEUE_ROUTER.prefix + "/"] = pagerduty_views.refusal
    app.openapi_schema = None
    if noc_sweep_s > 0:
        from velyrix.ops.noc import sweeping

        sweeping.install(app, noc_sweep_s)
    return app
