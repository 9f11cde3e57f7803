"""Every Grafana dashboard, checked in and generated, validates against Grafana's published dashboard
schema (the JSON schema of ``@grafana/schema`` 13.2.3's ``Dashboard`` type, vendored in
``tests/agent/schemas``; see its README)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from velyrix.agent import dashboards

HERE = Path(__file__).resolve().parent
SCHEMA = HERE / "schemas" / "grafana-dashboard-13.2.3.schema.json"
GRAFANA = HERE.parents[1] / "deploy" / "grafana"
# Keys of grafana.com's export/import format around the dashboard model: Grafana's import reads them
# (it asks for each `__inputs` entry) and they are not part of the model the schema describes.
EXPORT_ENVELOPE = {"__inputs", "__requires", "__elements"}


def _validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def _errors(board: dict[str, Any]) -> list[str]:
    model = {k: v for k, v in board.items() if k not in EXPORT_ENVELOPE}
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in sorted(_validator().iter_errors(model), key=lambda e: list(map(str, e.absolute_path)))
    ]


@pytest.mark.parametrize("name", sorted(p.name for p in GRAFANA.glob("*.json")))
def test_checked_in_dashboard_validates_against_grafanas_schema(name: str) -> None:
    board = json.loads((GRAFANA / name).read_text())
    assert {k for k in board if k.startswith("__")} <= EXPORT_ENVELOPE
    assert _errors(board) == []


@pytest.mark.parametrize("board", dashboards.DASHBOARDS, ids=lambda b: b.uid)
def test_generated_dashboard_validates_against_grafanas_schema(board: dashboards.Dashboard) -> None:
    assert _errors(dashboards.to_json(board)) == []


def _fleet_with(change: str) -> dict[str, Any]:
    board = copy.deepcopy(dashboards.to_json(dashboards.FLEET))
    if change == "definition":
        board["templating"]["list"][0]["definition"] = "label_values(velyrix_node_up, Hostname)"
    elif change == "allValue null":
        board["templating"]["list"][0]["allValue"] = None
    elif change == "panel without type":
        del board["panels"][0]["type"]
    elif change == "no schemaVersion":
        del board["schemaVersion"]
    elif change == "unknown top-level key":
        board["definition"] = "x"
    return board


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ("definition", "templating/list/0"),
        ("allValue null", "templating/list/0/allValue"),
        ("panel without type", "panels/0"),
        ("no schemaVersion", "(top)"),
        ("unknown top-level key", "(top)"),
    ],
)
def test_the_vendored_schema_rejects_what_grafanas_types_do_not_know(change: str, where: str) -> None:
    errors = _errors(_fleet_with(change))
    assert errors, f"the schema accepted a dashboard with {change}"
    assert any(e.startswith(f"{where}:") for e in errors), errors
