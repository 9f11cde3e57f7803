"""The console's members and roles: the tenant's users (signed in through SSO or provisioned over SCIM),
their roles, second factors and state, through the API's own routes (``api.routes.users``); an owner
changes a member's role with ``users.update_user`` (so its rules hold: a fresh step-up for a browser
session, never a tenant without an active owner), its audit event ``console.users.update``, and a refusal
shown beside that member's role."""

from __future__ import annotations

from typing import Any

import pydantic
from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from velyrix import errors
from velyrix.console import access, render
from velyrix.controlplane.api import problems, schemas
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.api.routes import users
from velyrix.controlplane.identity import members

router = APIRouter(include_in_schema=False)
PAGE = 100
STEP_UP_HINT = "confirm it with your security key (step-up) on /ui/security, then change the role again"


def _page(request: Request, ctx: Ctx, status: int = 200, cursor: str = "", **values: Any) -> Response:
    found = users.list_users(ctx, cursor=cursor or None, limit=PAGE)
    return render.page(
        request,
        "admin_members.html",
        status,
        members=found["items"],
        next_cursor=found["next_cursor"],
        roles=members.MEMBER_ROLES,
        can_change="tenants:write" in ctx.principal.scopes,
        refused=values.pop("refused", {}),
        changed=values.pop("changed", ""),
        title="Members and roles",
    )


@router.get("/console/members", name="console.members")
def members_page(
    request: Request,
    ctx: Ctx = Depends(access.reads("tenants:read")),
    cursor: str = Query("", max_length=61, pattern=f"^$|{schemas.CURSOR_PATTERN}"),
    changed: str = Query("", max_length=32),
) -> Response:
    """The tenant's members; for an owner, a role form per member."""
    return _page(request, ctx, cursor=cursor, changed=changed)


@router.post("/console/members/{user_id}/role", name="console.users.update")
def change_role(
    user_id: str,
    request: Request,
    ctx: Ctx = Depends(access.acts("tenants:write")),
    role: str = Form("", max_length=64),
) -> Response:
    """``users.update_user`` with the session; back to the list, or the list with the refusal beside the
    member's role (the API's status, a denied audit event)."""
    try:
        users.update_user(user_id, users.UserUpdate.model_validate({"role": role}), ctx)
    except pydantic.ValidationError as exc:
        return _refused(request, ctx, user_id, 422, "invalid_input", str(exc.errors()[0]["msg"]))
    except errors.VelyrixError as exc:
        if exc.http_status == 404:
            raise
        hint = STEP_UP_HINT if exc.code == "identity_step_up_required" else (exc.hint or "")
        message = exc.message + (f": {hint}" if hint else "")
        return _refused(request, ctx, user_id, exc.http_status, exc.code, message)
    return RedirectResponse(f"{render.PREFIX}/members?changed={user_id}", status_code=303)


def _refused(request: Request, ctx: Ctx, user_id: str, status: int, code: str, message: str) -> Response:
    problems.problem(request, status, code, f"role: {message}")
    return _page(request, ctx, status, refused={"user_id": user_id, "message": message})
