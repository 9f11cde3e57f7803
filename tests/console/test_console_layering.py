"""The console's route modules read and write only through the scope and the API's route code, like
the API's own (tests/controlplane/test_layering.py): no SQLAlchemy import, no session reached around
the scope layer."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from velyrix.ops.service import CONSOLE_ROUTERS


def test_console_route_modules_never_import_sqlalchemy_or_touch_the_session() -> None:
    names = {r.endpoint.__module__ for router in CONSOLE_ROUTERS for r in router.routes}  # type: ignore[attr-defined]
    modules = sorted(Path(str(importlib.import_module(n).__file__)) for n in names)
    assert {p.name for p in modules} >= {"pages.py", "keys.py", "live.py"}
    assert {p.name for p in modules} >= {"tenant_apply.py", "tenant_billing.py", "tenant_storage.py", "tenant_usage.py"}
    assert {p.name for p in modules} >= {"operator_fleet.py", "operator_noc.py"}
    assert {p.name for p in modules} >= {"operator_nodes.py", "operator_rollouts.py", "operator_contracts.py"}
    assert {p.name for p in modules} >= {"admin_audit.py", "admin_members.py", "admin_sanitization.py"}
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("sqlalchemy") for a in node.names), path.name
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("sqlalchemy"), path.name
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("session", "sessionmaker"), f"{path.name}:{node.lineno}"
