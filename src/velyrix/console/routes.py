"""Every router of the console, for the composition root (``velyrix.ops.service``) and the leak test."""

from __future__ import annotations

from fastapi import APIRouter

from velyrix.console import (
    admin_audit,
    admin_identity,
    admin_incidents,
    admin_members,
    admin_sanitization,
    admin_scim,
    keys,
    live,
    operator_contracts,
    operator_fleet,
    operator_noc,
    operator_nodes,
    operator_rollouts,
    pages,
)
from velyrix.console.tenant_apply import router as tenant_apply_router
from velyrix.console.tenant_billing import router as tenant_billing_router
from velyrix.console.tenant_storage import router as tenant_storage_router
from velyrix.console.tenant_usage import router as tenant_usage_router

ROUTERS: tuple[APIRouter, ...] = (
    pages.router,
    keys.router,
    live.router,
    tenant_billing_router,
    tenant_apply_router,
    tenant_storage_router,
    tenant_usage_router,
)
ROUTERS += (operator_fleet.router, operator_noc.router)
ROUTERS += (operator_nodes.router,)
ROUTERS += (operator_rollouts.router,)
ROUTERS += (operator_contracts.router,)
ROUTERS += (admin_incidents.router, admin_members.router, admin_identity.router, admin_scim.router)  # tenant admin
ROUTERS += (admin_audit.router, admin_sanitization.router)
