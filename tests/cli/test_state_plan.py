"""The state comparison without a server: planned actions against a given state, masking of values
derived from sensitive variables, and saved-plan refusal (the twin-backed runs are in
tests/reconcile/test_state_apply.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from velyrix import errors
from velyrix.cli import apply, state
from velyrix.declarations import loader

TF = """provider "velyrix" { region = "us-east-1" }
variable "team" {
  default   = "secret-team"
  sensitive = true
}
resource "velyrix_cluster" "a" {
  name       = var.team
  node_type  = "hgx-h200-8g"
  node_count = 4
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
}
"""


def test_values_from_sensitive_variables_are_masked_in_the_plan() -> None:
    spec_file = loader.loads(TF, "main.tf")
    (change,) = state.changes(spec_file, {}, apply.diff)
    assert change.action == "create" and change.sensitive == ("name",)
    con = Console(record=True, width=200)
    apply.render_changes(con, [change])
    text = con.export_text()
    assert "name = (sensitive value)" in text and "secret-team" not in text
    assert "Plan: 1 to add, 0 to change, 0 to destroy." in text
    assert {"name": "name", "before": None, "after": "(sensitive value)"} in change.to_dict()["fields"]


def test_a_saved_plan_names_its_state_and_endpoint(tmp_path: Path) -> None:
    spec_file = loader.loads(TF, "main.tf")
    planned = state.changes(spec_file, {}, apply.diff)
    path = tmp_path / "p.plan"
    state.save(path, planned, state.fingerprint({}), "http://127.0.0.1:1", "main.tf")
    data = state.read_saved(path)
    assert data is not None and state.read_saved(tmp_path / "nothing.tf") is None
    state.check_saved(data, {}, "http://127.0.0.1:1")
    with pytest.raises(errors.InvalidInputError, match="made against"):
        state.check_saved(data, {}, "http://127.0.0.1:2")
    moved = {"velyrix_cluster.b": {"id": "c1", "name": "b", "spec": {"node_count": 1}}}
    with pytest.raises(errors.InvalidInputError, match="state changed"):
        state.check_saved(data, moved, "http://127.0.0.1:1")
