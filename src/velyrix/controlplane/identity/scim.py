"""SCIM 2.0 service (RFC 7644) of a tenant at ``/scim/v2``, for its identity provider (Okta, Microsoft
Entra ...): Users and Groups (filter, pagination, attributes, PATCH, PUT, DELETE, ETags), and the
discovery endpoints ``/ServiceProviderConfig``, ``/ResourceTypes``, ``/Schemas``. Authenticated by a
tenant key with the scope ``scim:provision`` (role ``scim``); every change is an audit event. Errors are
SCIM Error messages (``application/scim+json``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    Context,
    ETag,
    Filter,
    Group,
    Patch,
    PatchOp,
    ResourceType,
    ResponseParameters,
    ScimFilter,
    ServiceProviderConfig,
    Sort,
    User,
)

from velyrix import errors
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.db.models.identity import ScimGroup
from velyrix.controlplane.db.models.identity import User as UserRow
from velyrix.controlplane.identity import scim_store as store

MEDIA = "application/scim+json"
MAX_BODY_BYTES = 1024 * 1024
_ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
PREFIX = "/scim/v2"
"""Where the SCIM endpoints live."""
_LIST = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
KINDS: dict[str, tuple[Any, Any]] = {"Users": (User, UserRow), "Groups": (Group, ScimGroup)}


def error_response(status: int, detail: str, scim_type: str | None = None) -> Response:
    """A SCIM Error message (RFC 7644 section 3.12) with ``status``."""
    body: dict[str, Any] = {"schemas": [_ERROR], "status": str(status), "detail": detail}
    if scim_type:
        body["scimType"] = scim_type
    return Response(json.dumps(body), status_code=status, media_type=MEDIA)


class ScimRoute(APIRoute):
    """Answers errors (ours, and request validation) as SCIM Error messages; audits refused changes."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def scim_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except errors.VelyrixError as exc:
                from velyrix.controlplane.api import problems

                held = getattr(request.state, "db", None)
                if held is not None:
                    held.rollback()  # nothing of the refused change stays, and its locks go
                problems._audit_refusal(request, exc.http_status, exc.code)
                scim_type = exc.fields.get("scim_type") if exc.fields else None
                return error_response(exc.http_status, exc.message, scim_type)
            except RequestValidationError as exc:
                return error_response(400, f"invalid request: {str(exc.errors())[:300]}", "invalidValue")

        return scim_handler


def _parameters(
    filter: str | None = Query(None, max_length=2000),
    startIndex: str | None = Query(None, max_length=20),
    count: str | None = Query(None, max_length=20),
    attributes: str | None = Query(None, max_length=2000),
    excludedAttributes: str | None = Query(None, max_length=2000),
    sortBy: str | None = Query(None, max_length=200),
    sortOrder: str | None = Query(None, max_length=20),
) -> None:
    """The query parameters of RFC 7644 section 3.4.2 (read from ``request.query_params`` by the routes)."""


router = APIRouter(
    prefix=PREFIX,
    tags=["scim"],
    route_class=ScimRoute,
    include_in_schema=False,
    dependencies=[Depends(_parameters)],
)
SCIM = require("scim:provision")


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/") + "/scim/v2"


def _json(data: Any, status: int = 200, etag: str | None = None) -> Response:
    headers = {"ETag": etag} if etag else None
    return Response(json.dumps(data, default=str), status_code=status, media_type=MEDIA, headers=headers)


async def _body(request: Request) -> Any:
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise store.scim_error(413, "request body over 1 MiB", "tooMany")
    try:
        return json.loads(raw or b"null")
    except ValueError as exc:
        raise store.scim_error(400, f"body is not JSON: {exc}", "invalidSyntax") from exc


@router.get("/ServiceProviderConfig", name="scim.config")
def service_provider_config(request: Request) -> Response:
    config = ServiceProviderConfig(
        documentation_uri=None,
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=store.MAX_RESULTS),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=True),
        authentication_schemes=[
            AuthenticationScheme(
                type=AuthenticationScheme.Type.oauthbearertoken,
                name="Bearer key",
                description="A Velyrix key of role scim: Authorization: Bearer vlx_...",
                primary=True,
            )
        ],
    )
    data = config.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    data["meta"] = {"resourceType": "ServiceProviderConfig", "location": _base(request) + "/ServiceProviderConfig"}
    return _json(data)


def _resource_type(request: Request, name: str) -> dict[str, Any]:
    model = KINDS[name][0]
    data: dict[str, Any] = ResourceType.from_resource(model).model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    data["endpoint"] = f"/{name}"
    data["meta"] = {"resourceType": "ResourceType", "location": f"{_base(request)}/ResourceTypes/{data['id']}"}
    return data


def _schema(request: Request, name: str) -> dict[str, Any]:
    data: dict[str, Any] = KINDS[name][0].to_schema().model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    data["meta"] = {"resourceType": "Schema", "location": f"{_base(request)}/Schemas/{data['id']}"}
    return data


def _listing(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemas": [_LIST],
        "totalResults": len(items),
        "startIndex": 1,
        "itemsPerPage": len(items),
        "Resources": items,
    }


@router.get("/ResourceTypes", name="scim.resource_types")
def resource_types(request: Request) -> Response:
    return _json(_listing([_resource_type(request, n) for n in KINDS]))


@router.get("/ResourceTypes/{type_id}", name="scim.resource_type")
def resource_type(type_id: str, request: Request) -> Response:
    for name in KINDS:
        if _resource_type(request, name)["id"] == type_id:
            return _json(_resource_type(request, name))
    raise store.scim_error(404, f"no resource type {type_id!r}")


@router.get("/Schemas", name="scim.schemas")
def schemas(request: Request) -> Response:
    return _json(_listing([_schema(request, n) for n in KINDS]))


@router.get("/Schemas/{schema_id}", name="scim.schema")
def schema(schema_id: str, request: Request) -> Response:
    for name in KINDS:
        if _schema(request, name)["id"] == schema_id:
            return _json(_schema(request, name))
    raise store.scim_error(404, f"no schema {schema_id!r}")


def _kind(kind: str) -> tuple[Any, Any]:
    if kind in ("ServiceProviderConfig", "ResourceTypes", "Schemas"):
        raise store.scim_error(405, f"/{kind} is read-only (GET)")
    if kind not in KINDS:
        raise store.scim_error(404, f"no SCIM endpoint /{kind}")
    return KINDS[kind]


def _doc(kind: str, row: Any, base: str) -> dict[str, Any]:
    return store.user_doc(row, base) if kind == "Users" else store.group_doc(row, base)


def _model(kind: str, row: Any, base: str) -> Any:
    return store.as_user(row, base) if kind == "Users" else store.as_group(row, base)


def _shaped(obj: Any, params: Any) -> dict[str, Any]:
    attrs = [a.strip() for a in str(params.get("attributes") or "").split(",") if a.strip()]
    excluded = [a.strip() for a in str(params.get("excludedAttributes") or "").split(",") if a.strip()]
    wanted: Any = ResponseParameters.model_validate(
        {"attributes": attrs or None, "excludedAttributes": excluded or None}
    )
    data: dict[str, Any] = obj.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE, response_parameters=wanted)
    return data


def _int(params: Any, name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise store.scim_error(400, f"{name} must be an integer", "invalidValue") from None


@router.post("/.search", name="scim.search_all")
async def search_all(request: Request, ctx: Ctx = Depends(SCIM)) -> Response:
    """POST /.search over Users and Groups (RFC 7644 section 3.4.3)."""
    params = _search_body(await _body(request))
    found = await ctx.run(_matching_all, ctx, request, params.get("filter"))
    return _json(_page_of(found, params))


def _matching_all(ctx: Ctx, request: Request, text: str | None) -> list[Any]:
    """Users and Groups matching ``text`` (a filter one kind cannot read matches none of it)."""
    return [o for kind in KINDS for o in _matching(ctx, kind, request, text, strict=False)]


@router.post("/{kind}/.search", name="scim.search")
async def search(kind: str, request: Request, ctx: Ctx = Depends(SCIM)) -> Response:
    """POST /{Users,Groups}/.search: the query in the body (RFC 7644 section 3.4.3)."""
    _kind(kind)
    params = _search_body(await _body(request))
    found = await ctx.run(_matching, ctx, kind, request, params.get("filter"))  # the reads off the event loop
    return _json(_page_of(found, params))


def _search_body(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise store.scim_error(400, "a SearchRequest JSON object is expected", "invalidSyntax")
    params: dict[str, Any] = {k: body.get(k) for k in ("filter", "startIndex", "count")}
    for name in ("attributes", "excludedAttributes"):
        value = body.get(name)
        params[name] = ",".join(str(a) for a in value) if isinstance(value, list) else value
    return {k: v for k, v in params.items() if v is not None}


@router.get("/{kind}", name="scim.list")
def list_resources(kind: str, request: Request, ctx: Ctx = Depends(SCIM)) -> Response:
    _kind(kind)
    params = dict(request.query_params)
    return _json(_page_of(_matching(ctx, kind, request, params.get("filter")), params))


def _page_of(objs: list[Any], params: dict[str, Any]) -> dict[str, Any]:
    start = max(1, _int(params, "startIndex", 1))
    count = min(max(0, _int(params, "count", store.MAX_RESULTS)), store.MAX_RESULTS)
    page = objs[start - 1 : start - 1 + count]
    return {
        "schemas": [_LIST],
        "totalResults": len(objs),
        "startIndex": start,
        "itemsPerPage": len(page),
        "Resources": [_shaped(o, params) for o in page],
    }


def _matching(ctx: Ctx, kind: str, request: Request, text: str | None, strict: bool = True) -> list[Any]:
    model, table = _kind(kind)
    base = _base(request)
    objs = [_model(kind, r, base) for r in store.rows(ctx.scope, table)]
    if text:
        try:
            bound = ScimFilter[model](text)  # type: ignore[valid-type]
            objs = [o for o in objs if bound.match(o)]
        except Exception as exc:  # scim2-models' filter errors
            if not strict:
                return []
            raise store.scim_error(400, f"invalid filter: {str(exc)[:300]}", "invalidFilter") from exc
    return objs


def _row(ctx: Ctx, kind: str, resource_id: str) -> Any:
    _, table = _kind(kind)
    row = store.get(ctx.scope, table, resource_id)
    if row is None:
        raise store.scim_error(404, f"{kind[:-1]} {resource_id!r} not found")
    return row


@router.get("/{kind}/{resource_id}", name="scim.get")
def get_resource(kind: str, resource_id: str, request: Request, ctx: Ctx = Depends(SCIM)) -> Response:
    row = _row(ctx, kind, resource_id)
    etag = f'W/"{row.version}"'
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers={"ETag": etag})
    return _json(_shaped(_model(kind, row, _base(request)), request.query_params), etag=etag)


def _write(ctx: Ctx, kind: str, row: Any, obj: Any, base: str) -> None:
    if kind == "Users":
        store.write_user(store.db(ctx.scope), row, obj)
    else:
        store.write_group(store.db(ctx.scope), row, obj, base)


def _saved(ctx: Ctx, kind: str, row: Any, request: Request, status: int, detail: dict[str, Any]) -> Response:
    ctx.audit(f"scim/{kind}/{row.id}", status_code=status, detail=detail)
    ctx.commit()
    fresh = _row(ctx, kind, row.id)
    data = _model(kind, fresh, _base(request)).model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
    response = _json(data, status, etag=f'W/"{fresh.version}"')
    if status == 201:
        response.headers["Location"] = data["meta"]["location"]
    return response


@router.post("/{kind}", name="scim.create", status_code=201)
async def create_resource(kind: str, request: Request, ctx: Ctx = Depends(SCIM)) -> Response:
    model, table = _kind(kind)
    obj = store.parse(model, await _body(request), Context.RESOURCE_CREATION_REQUEST)
    return await ctx.run(_create, ctx, kind, table, obj, request)


def _create(ctx: Ctx, kind: str, table: Any, obj: Any, request: Request) -> Response:
    extra = {"user_name": "", "scim": {}, "groups": []} if kind == "Users" else {"display_name": "", "members": []}
    row = table(tenant_id=ctx.principal.tenant_id, **extra)
    _write(ctx, kind, row, obj, _base(request))
    return _saved(ctx, kind, row, request, 201, {"op": "create"})


@router.put("/{kind}/{resource_id}", name="scim.replace")
async def replace_resource(kind: str, resource_id: str, request: Request, ctx: Ctx = Depends(SCIM)) -> Response:
    model, _ = _kind(kind)
    obj = store.parse(model, await _body(request), Context.RESOURCE_REPLACEMENT_REQUEST)
    return await ctx.run(_replace, ctx, kind, resource_id, obj, request)


def _replace(ctx: Ctx, kind: str, resource_id: str, obj: Any, request: Request) -> Response:
    row = _row(ctx, kind, resource_id)
    store.check_version(row, request.headers.get("if-match"))
    _write(ctx, kind, row, obj, _base(request))
    return _saved(ctx, kind, row, request, 200, {"op": "replace", "active": getattr(row, "active", None)})


@router.patch("/{kind}/{resource_id}", name="scim.patch")
async def patch_resource(kind: str, resource_id: str, request: Request, ctx: Ctx = Depends(SCIM)) -> Response:
    model, _ = _kind(kind)
    body = await _body(request)
    return await ctx.run(_patch, ctx, kind, model, resource_id, body, request)


def _patch(ctx: Ctx, kind: str, model: Any, resource_id: str, body: Any, request: Request) -> Response:
    row = _row(ctx, kind, resource_id)
    store.check_version(row, request.headers.get("if-match"))
    base = _base(request)
    current = _model(kind, row, base)
    operations = store.parse(PatchOp[model], _okta_entra(body), Context.RESOURCE_PATCH_REQUEST)
    try:
        operations.patch(current)
    except Exception as exc:  # scim2-models refuses a path or value
        raise store.scim_error(400, f"cannot apply the PATCH: {str(exc)[:300]}", "invalidValue") from exc
    _write(ctx, kind, row, current, base)
    return _saved(ctx, kind, row, request, 200, {"op": "patch", "active": getattr(row, "active", None)})


def _okta_entra(body: Any) -> Any:
    """PATCH shapes of Okta and Microsoft Entra made standard: capitalised ``op`` values (``Replace``),
    and ``active`` sent as the string ``"False"``."""
    if not isinstance(body, dict) or not isinstance(body.get("Operations"), list):
        return body
    fixed = []
    for op in body["Operations"]:
        if isinstance(op, dict):
            op = {**op, "op": str(op.get("op", "")).lower()}
            value = op.get("value")
            if isinstance(value, str) and op.get("path") == "active" and value.lower() in ("true", "false"):
                op["value"] = value.lower() == "true"
            if isinstance(value, dict) and isinstance(value.get("active"), str):
                op["value"] = {**value, "active": value["active"].lower() == "true"}
        fixed.append(op)
    return {**body, "Operations": fixed}


@router.delete("/{kind}/{resource_id}", name="scim.delete", status_code=204)
def delete_resource(kind: str, resource_id: str, request: Request, ctx: Ctx = Depends(SCIM)) -> Response:
    row = _row(ctx, kind, resource_id)
    store.check_version(row, request.headers.get("if-match"))
    store.delete(ctx.scope, row, _base(request))
    ctx.audit(f"scim/{kind}/{resource_id}", status_code=204, detail={"op": "delete"})
    ctx.commit()
    return Response(status_code=204)


@router.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], name="scim.unknown")
def unknown(path: str) -> Response:
    if path.split("/", 1)[0] in ("ServiceProviderConfig", "ResourceTypes", "Schemas"):
        raise store.scim_error(405, f"/{path[:100]} is read-only (GET)")
    raise store.scim_error(404, f"no SCIM endpoint /{path[:100]}")
