"""The lean handler of the hot authenticated GETs (``api/lean_route.py``) answers exactly as FastAPI's
own handler: every route of the ``velyrix server`` app that takes it is sent the same requests, good and
bad (no key, bad keys, a key without the scope, another tenant's key, a session cookie, a bad cookie,
unknown ids, hostile path parameters, an unknown query parameter, If-None-Match, another method) by an
app with lean handlers and by one whose handlers are all FastAPI's, on one database: same status,
headers, body and audit events. Routes of a shape the class does not understand, and requests made
while dependency overrides are set, fall back to FastAPI's handler."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import APIRouter, BackgroundTasks, Depends, FastAPI, Query, Request, Response
from fastapi import routing as fastapi_routing
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.testclient import TestClient
from pydantic import BaseModel

from tests.controlplane import cluster_rows
from velyrix.controlplane.api import lean_route, route_index

LEAN_PATHS = {"/v1/clusters/{cluster_id}", "/ui"}


class Counted:
    """Counts the calls of FastAPI's dependency solver (to tell which handler answered)."""

    def __init__(self, solve: Any) -> None:
        self.solve, self.calls = solve, 0

    async def __call__(self, **kwargs: Any) -> Any:
        self.calls += 1
        return await self.solve(**kwargs)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from velyrix.controlplane import db, specs
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import sessions
    from velyrix.ops.service import create_app

    tmp: Path = tmp_path_factory.mktemp("lean-route")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp / "keys"))
        url = f"sqlite:///{tmp / 'v.db'}"
        lean_app = create_app(url)
        route_index.effective_routes(lean_app)  # FastAPI builds each included route's handler here
        with pytest.MonkeyPatch.context() as understood_nothing:
            understood_nothing.setattr(lean_route, "plan_of", lambda route: None)
            fastapi_app = create_app(url)
            route_index.effective_routes(fastapi_app)
        made: dict[str, Any] = {}
        with lean_app.state.sessionmaker() as s:
            for name in ("a", "b"):
                t = db.models.Tenant(name=f"lean-{name}", display_name=name)
                s.add(t)
                s.flush()
                _, made[f"{name}_viewer"] = principals.issue_key(s, tenant_id=t.id, name="v", role="viewer")
                user = User(tenant_id=t.id, user_name=f"u@{name}.example", role="viewer", groups=[], scim={})
                s.add(user)
                s.flush()
                _, made[f"{name}_cookie"] = sessions.start(s, user, "oidc")
                spec = specs.validate(
                    specs.ClusterSpecBody(
                        name=f"c{name}",
                        region="us-east-1",
                        node_type="hgx-h200-8g",
                        node_count=2,
                        fabric="infiniband-ndr",
                        scheduler="slurm",
                        storage={"parallel_fs_tb": 100},
                    )
                )
                c = cluster_rows.pending_cluster(t.id, spec)
                s.add(c)
                s.flush()
                made[f"{name}_cluster"] = c.id
                if name == "a":
                    _, made["a_billing"] = principals.issue_key(s, tenant_id=t.id, name="b", role="billing")
                    revoked, made["a_revoked"] = principals.issue_key(s, tenant_id=t.id, name="r", role="viewer")
                    revoked.revoked_at = db.models.utcnow()
            s.commit()
        with TestClient(lean_app) as lean, TestClient(fastapi_app) as plain:
            yield {"lean_app": lean_app, "fastapi_app": fastapi_app, "lean": lean, "plain": plain, **made}
        lean_app.state.engine.dispose()
        fastapi_app.state.engine.dispose()


def _credentials(world: dict[str, Any]) -> dict[str, dict[str, str]]:
    from velyrix.controlplane.identity import sessions

    bearer = {k: {"Authorization": f"Bearer {world[k]}"} for k in ("a_viewer", "b_viewer", "a_billing", "a_revoked")}
    return {
        "none": {},
        **bearer,
        "malformed key": {"Authorization": "Bearer vlx_not-a-key"},
        "basic scheme": {"Authorization": "Basic dXNlcjpwYXNz"},
        "session a": {"Cookie": f"{sessions.COOKIE}={world['a_cookie']}"},
        "unknown session": {"Cookie": f"{sessions.COOKIE}=nothing-like-a-session"},
    }


def _paths(world: dict[str, Any], path_format: str) -> list[str]:
    if "{cluster_id}" not in path_format:
        return [path_format]
    fills = [world["a_cluster"], world["b_cluster"], "clu_missing", "x" * 300, "caf%C3%A9", "a%2Fb", "%00", "%20"]
    return [path_format.replace("{cluster_id}", fill) for fill in fills]


def _answer(client: TestClient, app: FastAPI, method: str, url: str, headers: dict[str, str]) -> dict[str, Any]:
    from sqlalchemy import select

    from velyrix.controlplane.db import models

    r = client.request(method, url, headers=headers, follow_redirects=False)
    request_id = r.headers.get("x-request-id", "")
    with app.state.sessionmaker() as s:
        events = s.scalars(select(models.AuditEvent).where(models.AuditEvent.request_id == request_id)).all()
        audited = sorted(
            (e.actor, e.key_id, e.tenant_id, e.action, e.target, e.outcome, e.status_code, e.error_code) for e in events
        )
    return {
        "status": r.status_code,
        "headers": sorted((k, v) for k, v in r.headers.items() if k != "x-request-id"),
        "body": r.content.replace(request_id.encode(), b"REQ") if request_id else r.content,
        "audit": audited,
    }


def test_every_lean_route_answers_as_fastapis_handler(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    lean_routes = [r for r in route_index.effective_routes(world["lean_app"]) if lean_route.takes(r)]
    assert {r.path_format for r in lean_routes} == LEAN_PATHS
    assert not any(lean_route.takes(r) for r in route_index.effective_routes(world["fastapi_app"]))
    counted = Counted(fastapi_routing.solve_dependencies)
    monkeypatch.setattr(fastapi_routing, "solve_dependencies", counted)
    statuses: set[int] = set()
    compared = solved_lean = solved_fastapi = 0
    for route in lean_routes:
        for path in _paths(world, route.path_format):
            requests = [("GET", path, headers) for headers in _credentials(world).values()]
            good = {"Authorization": f"Bearer {world['a_viewer']}"}
            requests += [("GET", path + "?unknown=1", good), ("HEAD", path, good), ("POST", path, good)]
            first = world["lean"].get(path, headers=good)
            if "etag" in first.headers:
                requests.append(("GET", path, {**good, "If-None-Match": first.headers["etag"]}))
            for method, url, headers in requests:
                before = counted.calls
                lean = _answer(world["lean"], world["lean_app"], method, url, headers)
                solved_lean += counted.calls - before
                before = counted.calls
                plain = _answer(world["plain"], world["fastapi_app"], method, url, headers)
                solved_fastapi += counted.calls - before
                assert lean == plain, (method, url, headers)
                statuses.add(lean["status"])
                compared += 1
    assert {200, 401, 403, 404, 405, 422} <= statuses
    assert compared > 100
    assert solved_lean < solved_fastapi / 2  # the lean handler answered most of them


def test_a_lean_route_skips_fastapis_solver_and_answers_the_same_body(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = Counted(fastapi_routing.solve_dependencies)
    monkeypatch.setattr(fastapi_routing, "solve_dependencies", counted)
    headers = {"Authorization": f"Bearer {world['a_viewer']}"}
    lean = world["lean"].get(f"/v1/clusters/{world['a_cluster']}", headers=headers)
    assert counted.calls == 0
    plain = world["plain"].get(f"/v1/clusters/{world['a_cluster']}", headers=headers)
    assert counted.calls == 1
    assert lean.status_code == plain.status_code == 200
    assert lean.content == plain.content and json.loads(lean.content)["id"] == world["a_cluster"]
    assert lean.headers["etag"] == plain.headers["etag"]


# A small app of routes of several shapes, each served by LeanRoute and by FastAPI's APIRoute.


class Item(BaseModel):
    name: str
    size: int


async def who(request: Request) -> str:
    return request.headers.get("x-who", "nobody")


async def counted_twice(request: Request) -> int:
    calls = request.scope.setdefault("calls", [])
    calls.append(1)
    return len(calls)


async def router_level(request: Request) -> None:
    if request.headers.get("x-refuse"):
        from velyrix import errors

        raise errors.PermissionDeniedError(scope="router")


async def with_sub(name: str = Depends(who)) -> str:
    return name


async def yielding() -> Any:
    yield "y"


def _shapes(router: APIRouter) -> None:
    @router.get("/plain/{item_id}")
    async def plain(item_id: str, request: Request, caller: str = Depends(who)) -> Response:
        return Response(f"{item_id}:{caller}:{request.url.path}", media_type="text/plain")

    @router.get("/model/{item_id}", response_model=Item, status_code=201)
    async def model(item_id: str, n: int = Depends(counted_twice), m: int = Depends(counted_twice)) -> Any:
        return {"name": item_id, "size": n + m, "dropped": "by the model"}

    @router.get("/invalid/{item_id}", response_model=Item)
    async def invalid(item_id: str) -> Any:
        return {"name": item_id}

    @router.get("/query/{item_id}")
    async def query(item_id: str, q: str = Query("")) -> dict[str, str]:
        return {"q": q}

    @router.get("/number/{item_id}")
    async def number(item_id: int) -> dict[str, int]:
        return {"n": item_id}

    @router.get("/sync/{item_id}")
    def sync(item_id: str) -> dict[str, str]:
        return {"id": item_id}

    @router.get("/nested")
    async def nested(name: str = Depends(with_sub)) -> dict[str, str]:
        return {"name": name}

    @router.get("/yield")
    async def gen(value: str = Depends(yielding)) -> dict[str, str]:
        return {"value": value}

    @router.get("/background")
    async def background(tasks: BackgroundTasks) -> dict[str, str]:
        return {}

    @router.get("/bearer")
    async def bearer(credentials: HTTPAuthorizationCredentials | None = Depends(HTTPBearer(auto_error=False))) -> Any:
        return {"scheme": credentials.scheme if credentials else ""}

    @router.get("/response")
    async def response(response: Response) -> dict[str, str]:
        response.headers["x-set"] = "1"
        return {}


UNDERSTOOD = {"/shapes/plain/{item_id}", "/shapes/model/{item_id}", "/shapes/invalid/{item_id}"}


def _shape_app(route_class: type[fastapi_routing.APIRoute]) -> FastAPI:
    from velyrix.controlplane.api import problems

    router = APIRouter(route_class=route_class, dependencies=[Depends(router_level)])
    _shapes(router)
    app = FastAPI()
    app.include_router(router, prefix="/shapes")
    problems.install(app)
    return app


def test_routes_of_other_shapes_fall_back_and_understood_ones_answer_the_same() -> None:
    lean_app, plain_app = _shape_app(lean_route.LeanRoute), _shape_app(fastapi_routing.APIRoute)
    routes = route_index.effective_routes(lean_app)
    assert {r.path_format for r in routes if lean_route.takes(r)} == UNDERSTOOD
    assert len(routes) == 11
    urls = [
        "/shapes/plain/a%20b",
        "/shapes/model/m",
        "/shapes/invalid/i",
        "/shapes/query/q?q=1",
        "/shapes/number/7",
        "/shapes/number/seven",
        "/shapes/sync/s",
        "/shapes/nested",
        "/shapes/yield",
        "/shapes/background",
        "/shapes/response",
        "/shapes/bearer",
    ]
    with (
        TestClient(lean_app, raise_server_exceptions=False) as lean,
        TestClient(plain_app, raise_server_exceptions=False) as plain,
    ):
        for url in urls:
            for headers in ({}, {"x-who": "w"}, {"x-refuse": "1"}, {"Authorization": "Bearer b"}):
                a, b = lean.get(url, headers=headers), plain.get(url, headers=headers)
                assert (a.status_code, a.headers.items(), a.content) == (b.status_code, b.headers.items(), b.content), (
                    url
                )
        assert lean.get("/shapes/model/m").json() == {"name": "m", "size": 2}  # one call: FastAPI's cache
        assert lean.get("/shapes/model/m").status_code == 201
        assert lean.get("/shapes/invalid/i").status_code == 500  # the response model refuses it, as FastAPI does
        assert lean.get("/shapes/number/seven").status_code == 422


def test_dependency_overrides_are_honoured_by_a_lean_route() -> None:
    app = _shape_app(lean_route.LeanRoute)

    async def someone_else(request: Request) -> str:
        return "override"

    with TestClient(app) as client:
        assert client.get("/shapes/plain/x").text == "x:nobody:/shapes/plain/x"
        app.dependency_overrides[who] = someone_else
        assert client.get("/shapes/plain/x").text == "x:override:/shapes/plain/x"
        app.dependency_overrides.clear()
        assert client.get("/shapes/plain/x").text == "x:nobody:/shapes/plain/x"


def test_a_request_recorded_by_fastapis_telemetry_goes_through_fastapis_handler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry import trace

    class Provider(trace.TracerProvider):  # a provider FastAPI traces with (its no-op one turns tracing off)
        def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
            return trace.NoOpTracer()

    router = APIRouter(route_class=lean_route.LeanRoute)
    _shapes(router)
    app = FastAPI(telemetry={"tracer_provider": Provider()})
    app.include_router(router, prefix="/shapes")
    counted = Counted(fastapi_routing.solve_dependencies)
    monkeypatch.setattr(fastapi_routing, "solve_dependencies", counted)
    with TestClient(app) as client:
        assert client.get("/shapes/plain/x", headers={"x-who": "w"}).text == "x:w:/shapes/plain/x"
    assert counted.calls == 1


_DOCUMENT = """
import json, sys
from fastapi import routing

add_api_route = routing.APIRouter.add_api_route
if sys.argv[1] == "fastapi":  # every route an APIRoute, as before LeanRoute

    def without_lean(self, path, endpoint, **options):
        if getattr(options.get("route_class_override"), "__name__", "") == "LeanRoute":
            options["route_class_override"] = None
        return add_api_route(self, path, endpoint, **options)

    routing.APIRouter.add_api_route = without_lean
from velyrix.controlplane.api import lean_route, route_index
from velyrix.ops.service import create_app

app = create_app(sys.argv[2])


def dependant(d):
    kinds = ("path_params", "query_params", "header_params", "cookie_params", "body_params")
    return None if d is None else {
        "call": getattr(d.call, "__qualname__", repr(d.call)),
        "scope": getattr(d.call, "required_scope", None),
        "params": [[f.name, f.alias, repr(f.field_info.annotation)] for k in kinds for f in getattr(d, k)],
        "request": d.request_param_name,
        "deps": [dependant(s) for s in d.dependencies],
    }


served = route_index.effective_routes(app)
routes = [[r.path_format, sorted(r.methods or ()), r.name, dependant(r.dependant)] for r in served]
print(sum(isinstance(r.original_route, lean_route.LeanRoute) for r in served if hasattr(r, "original_route")))
print(json.dumps({"openapi": app.openapi(), "routes": routes}, sort_keys=True))
"""


def test_the_openapi_document_and_the_route_table_are_those_of_fastapis_routes(tmp_path: Path) -> None:
    env = {**os.environ, "VELYRIX_SIGNING_KEY_DIR": str(tmp_path / "keys"), "VELYRIX_HOME": str(tmp_path)}
    docs = {}
    for kind in ("lean", "fastapi"):
        url = f"sqlite:///{tmp_path / (kind + '.db')}"
        done = subprocess.run([sys.executable, "-c", _DOCUMENT, kind, url], env=env, capture_output=True, check=True)
        count, docs[kind] = done.stdout.split(b"\n", 1)
        assert int(count) == (len(LEAN_PATHS) if kind == "lean" else 0)
    assert docs["lean"] == docs["fastapi"]
    document = json.loads(docs["lean"])
    assert "/v1/clusters/{cluster_id}" in document["openapi"]["paths"]
    assert any(r[0] == "/ui" and r[3]["deps"][0]["scope"] == "clusters:read" for r in document["routes"])
