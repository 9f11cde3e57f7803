"""Every router of the console, for the composition root (``velyrix.ops.service``) and the leak test."""

from __future__ import annotations

from fastapi import APIRouter

from velyrix.console import (
    keys,
    live,
    operator_contracts,
    operator_fleet,
    operator_noc,
    operator_nodes,
    operator_rollouts,
    pages,
)

ROUTERS: tuple[APIRouter, ...] = (pages.router, keys.router, live.router)
ROUTERS += (operator_fleet.router, operator_noc.router)
ROUTERS += (operator_nodes.router,)
ROUTERS += (operator_rollouts.router,)
ROUTERS += (operator_contracts.router,)
