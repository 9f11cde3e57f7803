"""The tenant-scoped query layer is the only way routes reach the database: route modules never
import SQLAlchemy (nor hold a session), so no route can bypass the tenant filter."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from velyrix.ops.service import ROUTERS


def test_route_modules_never_import_sqlalchemy_or_touch_the_session() -> None:
    names = {r.endpoint.__module__ for router in ROUTERS for r in router.routes}  # type: ignore[attr-defined]
    modules = sorted(Path(str(importlib.import_module(n).__file__)) for n in names)
    assert len(modules) >= 8
    for path in modules:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("sqlalchemy") for a in node.names), path.name
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("sqlalchemy"), path.name
            if isinstance(node, ast.Attribute) and node.attr in ("session", "sessionmaker"):
                raise AssertionError(f"{path.name}:{node.lineno} reaches the session around the scope layer")
