"""The contracts page (provider staff, scope ``fleet:read`` for the page): per tenant, its SLA contract (the
tenant's own or the catalog default: terms, notice, credits) read through the API's own route function
(``contracts.get``), and the maintenance windows announced for its clusters (read through the scope), with
whether each was announced early enough to be excluded from availability."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from velyrix.console import access, render
from velyrix.controlplane import scoping
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.api.routes import tenants
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.ops.billing import routes as billing_routes

router = APIRouter(include_in_schema=False)


def _terms(contract: dict[str, Any]) -> list[tuple[str, str]]:
    """The contract's terms as (name, value) rows; nested tables are written as ``key=value`` lists."""
    rows = []
    for key, value in contract.items():
        if key == "name":
            continue
        if isinstance(value, dict):
            shown = ", ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, list):
            shown = "; ".join(str(v) for v in value)
        else:
            shown = str(value)
        rows.append((key, shown))
    return rows


@router.get("/console/contracts", name="console.contracts")
def contracts(request: Request, ctx: Ctx = Depends(access.reads("fleet:read"))) -> Response:
    """Every tenant's SLA contract (``contracts.get``) and its maintenance windows, newest first."""
    found = tenants.list_tenants(ctx, None, None, scoping.MAX_PAGE)["items"]
    windows, _ = ctx.scope.page(models_noc.MaintenanceWindow, limit=scoping.MAX_PAGE)
    rows = []
    for tenant in found:
        data = billing_routes.get_contract(tenant["id"], ctx)
        mine = sorted((w for w in windows if w.tenant_id == tenant["id"]), key=lambda w: w.starts_at, reverse=True)
        rows.append(
            {
                "tenant": tenant,
                "custom": data["custom"],
                "name": data["contract"].get("name", ""),
                "terms": _terms(data["contract"]),
                "windows": mine,
            }
        )
    return render.page(request, "operator_contracts.html", title="Contracts", rows=rows)
