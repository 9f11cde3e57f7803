"""A route class for the hot authenticated GETs: their handler calls the route's dependencies and its
endpoint directly, without FastAPI's generic dependency solver.

FastAPI answers every request by solving the route's dependency tree (``solve_dependencies``: a
``Response`` made for a ``response`` parameter nobody declared, a dependency cache, and
``request_params_to_args`` over the path, query, header and cookie parameters of the route and of each
dependency, which parses the query string and the cookies even when none is declared); on a key GET
that was about a third of FastAPI's own time (docs/benchmarks.md, "The authenticated request path").
``LeanRoute`` is an ``APIRoute`` whose handler, for an endpoint of a shape it fully understands
(``plan_of``), does only what the solver would do for that shape:

- each dependency (``Depends(require(...))`` and router-level ones) is an ``async def`` taking at
  most the ``Request``, with no parameters or dependencies of its own, called in order, once per
  callable as FastAPI's dependency cache does;
- the endpoint is an ``async def`` whose other parameters are path parameters declared as plain ``str``
  (which FastAPI's validation passes unchanged: a matched path segment is always a string) and
  optionally the ``Request``; no query, header, cookie or body parameters (unknown query parameters are
  refused by ``context._refuse_unknown_query_parameters`` inside ``require``), no ``Response``,
  ``BackgroundTasks`` or security-scope parameters, no generator.

A returned ``Response`` is answered as it is (FastAPI does the same); any other value goes through the
route's response model exactly as in ``fastapi.routing.get_request_handler``. Anything else falls back to
FastAPI's own handler, and so does every request made while ``app.dependency_overrides`` is not empty or
FastAPI's telemetry is recording (both change what the solver does). The route object, its
``dependant`` and the OpenAPI document are FastAPI's, unchanged: only the handler differs, and it is
built for the route as included (FastAPI's effective route context: the router-level dependencies and
the full path), as ``APIRoute.get_route_handler`` does. ``tests/controlplane/test_lean_route.py`` runs
every route of this class through both handlers on the same requests.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import APIRouter, params
from fastapi import routing as fastapi_routing
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import (
    Dependant,
    _is_async_gen_callable,
    _is_coroutine_callable,
    _is_security_scheme,
)
from fastapi.utils import is_body_allowed_for_status_code
from starlette.requests import Request
from starlette.responses import Response

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
F = TypeVar("F", bound=Callable[..., Any])
_PARAM_KINDS = ("path_params", "query_params", "header_params", "cookie_params", "body_params")
_SPECIAL_PARAMS = (
    "websocket_param_name",
    "http_connection_param_name",
    "response_param_name",
    "background_tasks_param_name",
    "security_scopes_param_name",
)


@dataclass(frozen=True)
class Step:
    """One dependency of a lean route: its callable, the name of its ``Request`` parameter (or None),
    the endpoint parameter it fills (None for a router-level dependency), whether it is cached and its
    key in the request's dependency cache (FastAPI's: the callable and its scope; no security scopes)."""

    call: Callable[..., Any]
    request_param: str | None
    name: str | None
    use_cache: bool
    cache_key: tuple[Any, ...]


@dataclass(frozen=True)
class Plan:
    """What a lean handler does: the dependencies in order, then the endpoint with its ``str`` path
    parameters (parameter name, path name) and its ``Request`` parameter (or None)."""

    steps: tuple[Step, ...]
    endpoint: Callable[..., Any]
    path_params: tuple[tuple[str, str], ...]
    request_param: str | None


def _async_plain(call: Any) -> bool:
    return call is not None and _is_coroutine_callable(call) and not _is_async_gen_callable(call)


def _bare(dependant: Dependant) -> bool:
    """No parameters but perhaps the ``Request``, no special ones, no dependencies, no security scheme
    or scopes."""
    return (
        _async_plain(dependant.call)
        and not dependant.dependencies
        and not any(getattr(dependant, kind) for kind in _PARAM_KINDS)
        and not any(getattr(dependant, name) for name in _SPECIAL_PARAMS)
        and not dependant.own_oauth_scopes
        and not dependant.parent_oauth_scopes
        and not _is_security_scheme(dependant=dependant)  # FastAPI caches those per set of scopes
        and dependant.concurrency is None
    )


def _plain_str(field: Any) -> bool:
    """A path parameter FastAPI passes through unchanged: annotated ``str``, no constraints or alias."""
    info = field.field_info
    return (
        isinstance(info, params.Path)
        and info.annotation is str
        and not info.metadata
        and field.alias == field.name
        and getattr(field, "mode", "validation") == "validation"
    )


def plan_of(route: Any) -> Plan | None:
    """The plan for ``route`` (an ``APIRoute`` or FastAPI's effective context of an included one), or
    None when its endpoint or a dependency is of a shape the lean handler does not understand."""
    dependant: Dependant | None = route.dependant
    if dependant is None or route.body_field is not None or route.is_json_stream or route.is_sse_stream:
        return None
    if not _async_plain(dependant.call) or any(getattr(dependant, kind) for kind in _PARAM_KINDS[1:]):
        return None
    if any(getattr(dependant, name) for name in _SPECIAL_PARAMS) or dependant.own_oauth_scopes:
        return None
    if not all(_plain_str(field) for field in dependant.path_params):
        return None
    if not all(_bare(sub) for sub in dependant.dependencies):
        return None
    steps = tuple(
        Step(sub.call, sub.request_param_name, sub.name, sub.use_cache, (sub.call, sub.scope or ""))  # type: ignore[arg-type]
        for sub in dependant.dependencies
    )
    path = tuple((field.name, field.alias) for field in dependant.path_params)
    return Plan(steps, dependant.call, path, dependant.request_param_name)  # type: ignore[arg-type]


class LeanRoute(fastapi_routing.APIRoute):
    """``APIRoute`` with the lean handler where ``plan_of`` understands the route as served, FastAPI's
    own handler otherwise (``takes`` tells which)."""

    def get_route_handler(self) -> Handler:
        generic = super().get_route_handler()
        route: Any = self
        effective = fastapi_routing._effective_route_context_var.get()
        if effective is not None and effective.original_route is self:
            route = effective
        plan = plan_of(route)
        if plan is None:
            return generic
        route.lean_plan = plan  # which routes, as served, take the lean handler (``takes``)
        return lean_handler(plan, route, generic)


def takes(route: Any) -> bool:
    """Whether ``route`` (an ``APIRoute`` or FastAPI's effective context of an included one, as
    ``route_index.effective_routes`` lists them) answers through a lean handler."""
    return getattr(route, "lean_plan", None) is not None


def lean_handler(plan: Plan, route: Any, generic: Handler) -> Handler:
    """The handler of ``plan``; ``generic`` (FastAPI's handler of the same route) answers instead while
    dependency overrides are set or telemetry records the request."""
    overrides_provider = route.dependency_overrides_provider
    steps, endpoint, path_params, request_param = plan.steps, plan.endpoint, plan.path_params, plan.request_param

    async def handler(request: Request) -> Response:
        if request.scope.get("fastapi.telemetry") is not None or (
            overrides_provider is not None and getattr(overrides_provider, "dependency_overrides", None)
        ):
            return await generic(request)
        values: dict[str, Any] = {}
        solved: dict[Any, Any] = {}
        for step in steps:
            if step.use_cache and step.cache_key in solved:
                value = solved[step.cache_key]
            else:
                value = await (
                    step.call() if step.request_param is None else step.call(**{step.request_param: request})
                )
                solved.setdefault(step.cache_key, value)
            if step.name is not None:
                values[step.name] = value
        matched = request.scope.get("path_params", {})
        for name, alias in path_params:
            values[name] = matched[alias]
        if request_param is not None:
            values[request_param] = request
        raw = await endpoint(**values)
        if isinstance(raw, Response):
            return raw
        return await serialize(route, raw, request)

    return handler


async def serialize(route: Any, raw: Any, request: Request) -> Response:
    """A value that is not a ``Response`` answered as FastAPI's handler answers it: validated and
    serialized by the route's response model (or ``jsonable_encoder``), in its response class, with its
    status code (``fastapi.routing.get_request_handler``, pinned FastAPI, pyproject.toml)."""
    response_class = route.response_class
    use_dump_json = route.response_field is not None and isinstance(response_class, DefaultPlaceholder)
    endpoint_ctx = dict(fastapi_routing._extract_endpoint_context(route.dependant.call))
    if route.dependant.path:
        mount_path = request.scope.get("root_path", "").rstrip("/")
        endpoint_ctx["path"] = f"{request.method} {mount_path}{route.dependant.path}"
    content = await fastapi_routing.serialize_response(
        field=route.response_field,
        response_content=raw,
        include=route.response_model_include,
        exclude=route.response_model_exclude,
        by_alias=route.response_model_by_alias,
        exclude_unset=route.response_model_exclude_unset,
        exclude_defaults=route.response_model_exclude_defaults,
        exclude_none=route.response_model_exclude_none,
        is_coroutine=True,
        endpoint_ctx=endpoint_ctx,  # type: ignore[arg-type]
        dump_json=use_dump_json,
    )
    args: dict[str, Any] = {"background": None}
    if route.status_code:
        args["status_code"] = route.status_code
    if use_dump_json:
        response = Response(content=content, media_type="application/json", **args)
    else:
        cls = response_class.value if isinstance(response_class, DefaultPlaceholder) else response_class
        response = cls(content, **args)
    if not is_body_allowed_for_status_code(response.status_code):
        response.body = b""
    return response


def get(router: APIRouter, path: str, **options: Any) -> Callable[[F], F]:
    """``@router.get(path, **options)`` with ``LeanRoute`` as the route's class."""

    def decorator(endpoint: F) -> F:
        router.add_api_route(path, endpoint, methods=["GET"], route_class_override=LeanRoute, **options)
        return endpoint

    return decorator
