"""docs/plan-schema.md and the plan JSON agree: every documented path exists with its type."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ..conftest import EXAMPLES, ROOT

ROW = re.compile(r"^\| `([^`]+)` \| (\w+) \|")
TYPES = {"integer": int, "number": (int, float), "string": str, "array": list, "object": dict, "boolean": bool}


def documented() -> list[tuple[str, str]]:
    rows = []
    for line in (ROOT / "docs" / "plan-schema.md").read_text().splitlines():
        match = ROW.match(line)
        if match:
            rows.append((match.group(1), match.group(2)))
    return rows


def lookup(data: Any, path: str) -> list[Any]:
    """Values at a dotted path where ``name[]`` walks every element of an array."""
    values = [data]
    for part in path.split("."):
        many = part.endswith("[]")
        key = part[:-2] if many else part
        nxt = []
        for v in values:
            if not isinstance(v, dict) or key not in v:
                return []
            nxt.extend(v[key] if many else [v[key]])
        values = nxt
    return values


def test_schema_document_has_rows() -> None:
    assert len(documented()) >= 20


CLUSTER_FILES = sorted(p.name for p in EXAMPLES.glob("*.tf") if 'resource "velyrix_cluster"' in p.read_text())
"""Examples that ``velyrix plan`` plans (a rollout file is planned by ``velyrix rollout plan``)."""


@pytest.mark.parametrize("example", CLUSTER_FILES)
def test_every_documented_path_is_in_the_output(example: str, velyrix) -> None:
    result = velyrix("plan", str(EXAMPLES / example), "--json")
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    for path, kind in documented():
        values = lookup(plan, path)
        optional_section = any(f".{s}" in path for s in ("storage_plan", "goodput"))
        if optional_section and not values:
            continue  # present only for resources with a workload block
        assert values, f"{path} documented but missing for {example}"
        for value in values:
            if value is None:
                continue
            assert isinstance(value, TYPES[kind]), f"{path}: {value!r} is not {kind}"


def test_every_resource_key_is_documented(velyrix) -> None:
    plan = json.loads(velyrix("plan", str(EXAMPLES / "acme-pretrain.tf"), "--json").stdout)
    paths = {p for p, _ in documented()}
    for key in plan["resources"][0]:
        assert any(p == f"resources[].{key}" or p.startswith(f"resources[].{key}.") for p in paths), key
