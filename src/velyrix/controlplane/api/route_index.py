"""Route matching that skips the routers a path cannot reach.

FastAPI matches a request by trying each included router in turn, and inside each one every route's
regular expression (about 4 us a route here: bench/bench_identity.py); a ``/v1/clusters/{id}`` request
tried the 18 routes of the five routers mounted before the clusters router, and a route at the end of
the table all ~200 routes. ``install`` gives each included router of an app a guard: the literal start of
every path it holds (the path template up to its first ``{``); a request path that begins with none of
them cannot match any route of that router, so the router answers "no match" without trying them. What
matches, and in which order, is unchanged (``tests/controlplane/test_route_index.py``).

FastAPI keeps included routers as ``fastapi.routing._IncludedRouter`` (pinned FastAPI, pyproject.toml);
the guard is a subclass of it, so the route table, the OpenAPI document and ``url_path_for`` see the
same objects. A router holding anything whose paths are not known (a frontend route group, another kind
of route) keeps FastAPI's own matching."""

from __future__ import annotations

import contextvars
from typing import Any

from fastapi import FastAPI
from fastapi import routing as fastapi_routing
from starlette._utils import get_route_path
from starlette.routing import Match

_Included: Any = fastapi_routing._IncludedRouter


def literal_start(path_format: str) -> str:
    """The part of a path template before its first parameter: ``/v1/clusters/`` of
    ``/v1/clusters/{cluster_id}``; the whole template when it has none."""
    return path_format.split("{", 1)[0]


def starts_of(included: Any) -> tuple[str, ...] | None:
    """The literal starts of every path ``included`` (an included router) can match, or ``None`` when
    one of its routes is of a kind whose paths are not known here (then nothing is skipped)."""
    starts: set[str] = set()
    for candidate in included.effective_candidates():
        if isinstance(candidate, _Included):
            inner = starts_of(candidate)
            if inner is None:
                return None
            starts.update(inner)
            continue
        route = candidate.starlette_route or candidate.original_route
        if not isinstance(candidate.original_route, fastapi_routing.APIRoute):
            path_format = getattr(route, "path_format", None)
        else:
            path_format = candidate.path_format
        if not isinstance(path_format, str) or not path_format.startswith("/"):
            return None
        starts.add(literal_start(path_format))
    return tuple(sorted(starts))


class GuardedRouter(_Included):  # type: ignore[misc]
    """An included router that answers ``Match.NONE`` at once to a path it cannot match, and matches a
    request once: FastAPI's router matches an included router's routes when it picks the router
    (``matches``) and again when it hands it the request (``_handle_selected``); the second time gets the
    first one's answer (the same scope: type, method, path, root path and path parameters)."""

    def _version(self) -> int:
        """``original_router._get_routes_version()`` (which walks the router's routes), read as the
        router's own counter while it includes no other router: including one moves that counter."""
        router = self.original_router
        flat = self.__dict__.get("_velyrix_flat")
        if flat is not None and flat == router._routes_version:
            return flat  # type: ignore[no-any-return]
        version: int = router._get_routes_version()
        nested = any(isinstance(r, _Included) for r in router.routes)
        self.__dict__["_velyrix_flat"] = None if nested else router._routes_version
        return version

    def effective_candidates(self) -> Any:
        if self._effective_candidates_version is not None and self._effective_candidates_version == self._version():
            candidates = self._effective_candidates
        else:
            candidates = super().effective_candidates()
        matching = _MATCHING.get()
        if matching is None or matching[0] is not self:
            return candidates
        return [
            c for start, c in self._starts_by_candidate(candidates) if start is None or matching[1].startswith(start)
        ]

    def _starts_by_candidate(self, candidates: list[Any]) -> list[tuple[str | None, Any]]:
        """Each of ``candidates`` with the literal start of its path (None: a nested router or another
        kind of route, always tried), kept while the candidate list is the same object."""
        cached = self.__dict__.get("_velyrix_by_candidate")
        if cached is None or cached[0] is not candidates:
            pairs = [(_candidate_start(c), c) for c in candidates]
            cached = self.__dict__["_velyrix_by_candidate"] = (candidates, pairs)
        return cached[1]

    def matches(self, scope: Any) -> tuple[Match, Any]:
        version = self._version()
        cached = self.__dict__.get("_velyrix_starts")
        if cached is None or cached[0] != version:
            cached = self.__dict__["_velyrix_starts"] = (version, starts_of(self))
        starts = cached[1]
        if starts is not None and not get_route_path(scope).startswith(starts):
            return Match.NONE, {}
        return super().matches(scope)  # type: ignore[no-any-return]

    def _match(self, scope: Any) -> Any:
        key = (scope["type"], scope.get("method"), scope["path"], scope.get("root_path", ""), scope.get("path_params"))
        memo = scope.get(_MATCHED)
        if memo is not None and memo[0] is self and memo[1] == key:
            return memo[2]
        token = _MATCHING.set((self, get_route_path(scope)))
        try:
            found = super()._match(scope)
        finally:
            _MATCHING.reset(token)
        scope[_MATCHED] = (self, (*key[:4], dict(key[4]) if key[4] is not None else None), found)
        return found


def _candidate_start(candidate: Any) -> str | None:
    """The literal start of an API route's full path (its regular expression begins with it), or None."""
    if isinstance(candidate, _Included) or not isinstance(candidate.original_route, fastapi_routing.APIRoute):
        return None
    path_format = candidate.path_format
    return literal_start(path_format) if isinstance(path_format, str) and path_format.startswith("/") else None


_MATCHING: contextvars.ContextVar[tuple[Any, str] | None] = contextvars.ContextVar("velyrix_matching", default=None)
"""While ``GuardedRouter._match`` runs: (that router, the request's route path); its
``effective_candidates`` then lists only the routes whose path can begin the request's."""
_MATCHED = "velyrix.matched"
"""Scope key of ``GuardedRouter._match``'s last answer: (router, what it matched on, the answer)."""


def install(app: FastAPI) -> int:
    """Guard every router included in ``app`` so far (again after later ``include_router`` calls);
    returns how many routers are guarded."""
    guarded = 0
    for route in app.router.routes:
        if type(route) is _Included:
            route.__class__ = GuardedRouter
        guarded += isinstance(route, GuardedRouter)
    return guarded


def effective_routes(app: FastAPI) -> list[Any]:
    """Every API route of ``app`` as FastAPI serves it (its full ``path_format``, ``methods`` and
    ``dependant``), through the included routers."""
    found: list[Any] = []
    todo: list[Any] = [r for r in app.router.routes if isinstance(r, _Included)]
    while todo:
        for candidate in todo.pop(0).effective_candidates():
            if isinstance(candidate, _Included):
                todo.append(candidate)
            elif isinstance(candidate.original_route, fastapi_routing.APIRoute):
                found.append(candidate)
    found += [r for r in app.router.routes if isinstance(r, fastapi_routing.APIRoute)]
    return found
