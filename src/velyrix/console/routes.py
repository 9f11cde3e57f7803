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
    pages,
)

ROUTERS: tuple[APIRouter, ...] = (pages.router, keys.router, live.router)
ROUTERS += (admin_incidents.router, admin_members.router, admin_identity.router, admin_scim.router)  # tenant admin
ROUTERS += (admin_audit.router, admin_sanitization.router)
