"""Route matching with the routers' guards (``api/route_index.py``) finds, for every path of the route
table (and near misses: a trailing slash, another method, a path no route has), the same router and the
same kind of match as FastAPI's own matching without them; and the routers a path cannot reach are
skipped."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import routing as fastapi_routing
from starlette.routing import Match


@pytest.fixture(scope="module")
def guarded_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from velyrix.ops.service import create_app

    tmp: Path = tmp_path_factory.mktemp("route-index")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp / "keys"))
        application = create_app(f"sqlite:///{tmp / 'v.db'}")
        yield application
        application.state.engine.dispose()


def _scope(method: str, path: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": [], "query_string": b""}


def _first_match(guarded_app: Any, scope: dict[str, Any]) -> tuple[int, Match] | None:
    for n, route in enumerate(guarded_app.router.routes):
        match, _ = route.matches(scope)
        if match != Match.NONE:
            return n, match
    return None


def _sample_paths(guarded_app: Any) -> list[tuple[str, str]]:
    samples: list[tuple[str, str]] = [("GET", "/nowhere"), ("GET", "/v1/nowhere"), ("GET", "/")]
    paths = [getattr(r, "path", None) for r in guarded_app.router.routes]
    for included in guarded_app.router.routes:
        if isinstance(included, fastapi_routing._IncludedRouter):
            paths += [getattr(c, "path_format", None) for c in included.effective_candidates()]
    for path in paths:
        if not isinstance(path, str):
            continue
        filled = re.sub(r"\{[^}]+\}", "x1", path)
        for method in ("GET", "POST", "DELETE"):
            samples += [(method, filled), (method, filled + "/"), (method, filled + "/extra")]
    return samples


def test_every_path_matches_the_same_router_as_without_the_guards(guarded_app: Any) -> None:
    from velyrix.controlplane.api import route_index

    guarded = [r for r in guarded_app.router.routes if isinstance(r, route_index.GuardedRouter)]
    assert len(guarded) > 20
    samples = _sample_paths(guarded_app)
    assert len(samples) > 500
    with_guards = [_first_match(guarded_app, _scope(m, p)) for m, p in samples]
    for route in guarded:
        route.__class__ = fastapi_routing._IncludedRouter
    try:
        without = [_first_match(guarded_app, _scope(m, p)) for m, p in samples]
    finally:
        route_index.install(guarded_app)
    assert with_guards == without
    assert sum(found is not None and found[1] == Match.FULL for found in without) > 100


def test_a_router_is_skipped_for_a_path_it_cannot_reach(guarded_app: Any) -> None:
    from velyrix.controlplane.api import route_index

    clusters = next(
        r
        for r in guarded_app.router.routes
        if getattr(getattr(r, "original_router", None), "prefix", "") == "/v1/clusters"
    )
    starts = route_index.starts_of(clusters)
    assert starts is not None and "/v1/clusters/" in starts and "/v1/clusters" in starts
    assert clusters.matches(_scope("GET", "/v1/nodes/x1")) == (Match.NONE, {})
    assert clusters.matches(_scope("GET", "/v1/clusters/x1"))[0] == Match.FULL
    assert route_index.literal_start("/v1/clusters/{cluster_id}/fabric") == "/v1/clusters/"


def test_requests_are_answered_through_the_guarded_table(guarded_app: Any) -> None:
    from fastapi.testclient import TestClient

    with TestClient(guarded_app) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/v1/clusters/x1").status_code == 401  # found, then refused without a key
        assert client.get("/v1/nowhere").status_code == 404
        assert client.put("/healthz").status_code == 405


def test_the_openapi_document_states_the_bearer_scheme_on_exactly_the_routes_that_require_a_key(
    guarded_app: Any,
) -> None:
    from velyrix.controlplane.api import route_index

    guarded_app.openapi_schema = None
    schema = guarded_app.openapi()
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    keyed = {
        (route.path_format, method.lower())
        for route in route_index.effective_routes(guarded_app)
        if any(getattr(d.call, "required_scope", None) for d in route.dependant.dependencies)
        for method in route.methods
    }
    stated = {
        (path, method) for path, ops in schema["paths"].items() for method, op in ops.items() if op.get("security")
    }
    assert ("/v1/clusters/{cluster_id}", "get") in stated and ("/healthz", "get") not in stated
    assert stated == {k for k in keyed if k[0] in schema["paths"]}


def _selected(router: Any, scope: dict[str, Any]) -> tuple[Any, ...]:
    """What an included router hands the request to: the kind of match, the path parameters, the route
    and FastAPI's effective context of it (by identity)."""
    match, child, route, context = router._match(scope)
    return match, child.get("path_params"), child.get("route"), id(route), id(context)


def test_every_path_is_handed_to_the_same_route_as_without_the_guards(guarded_app: Any) -> None:
    """The guards' own matching (only the routes whose path can begin the request's, matched once per
    request) selects the same route, context and path parameters as FastAPI's, for every sample path."""
    from velyrix.controlplane.api import route_index

    guarded = [r for r in guarded_app.router.routes if isinstance(r, route_index.GuardedRouter)]
    samples = _sample_paths(guarded_app)
    with_guards = []
    for method, path in samples:
        for router in guarded:
            scope = _scope(method, path)
            router.matches(scope)  # the first match, remembered in the scope
            with_guards.append((_selected(router, scope), _selected(router, _scope(method, path))))
    for route in guarded:
        route.__class__ = fastapi_routing._IncludedRouter
    try:
        without = [_selected(router, _scope(m, p)) for m, p in samples for router in guarded]
    finally:
        route_index.install(guarded_app)
    assert [again for again, _ in with_guards] == without
    assert [fresh for _, fresh in with_guards] == without
    assert sum(found[0] == Match.FULL for found in without) > 100


def test_a_remembered_match_is_not_reused_for_another_path(guarded_app: Any) -> None:
    clusters = next(
        r
        for r in guarded_app.router.routes
        if getattr(getattr(r, "original_router", None), "prefix", "") == "/v1/clusters"
    )
    scope = _scope("GET", "/v1/clusters/x1")
    assert clusters._match(scope)[1]["path_params"] == {"cluster_id": "x1"}
    scope["path"] = "/v1/clusters/x2"
    assert clusters._match(scope)[1]["path_params"] == {"cluster_id": "x2"}
    scope["method"] = "PATCH"
    assert clusters._match(scope)[0] == Match.PARTIAL
