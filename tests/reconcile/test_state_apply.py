"""The control plane is the state: ``velyrix plan`` against it, destruction of resources removed from
the configuration, saved plans (``-out``), ``-target``, ``-refresh-only``, ``prevent_destroy`` and
``ignore_changes`` - the CLI against a real HTTP server on loopback, SQLite and the twin."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import uvicorn

from tests.reconcile.test_fleet_api_cli import Plane
from velyrix.controlplane.db import models
from velyrix.testing.postgres import free_port

HEAD = 'provider "velyrix" { region = "us-east-1" }\n'


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Plane]:
    """A control plane on loopback (SQLite, twin region) with the CLI logged in as a tenant."""
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    plane = Plane(tmp_path)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(plane.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    plane.runtime.start()
    monkeypatch.setenv("VELYRIX_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("VELYRIX_API_KEY", plane.tenant_key)
    yield plane
    plane.runtime.stop()
    server.should_exit = True
    thread.join(5)


def cluster(label: str, name: str, nodes: int, extra: str = "") -> str:
    return f"""
resource "velyrix_cluster" "{label}" {{
  name       = "{name}"
  node_type  = "hgx-h200-8g"
  node_count = {nodes}
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  {extra}
}}
"""


def phases(plane: Plane) -> dict[str, str]:
    with plane.app.state.sessionmaker() as s:
        # a deleted cluster frees its name: it is kept as NAME~deleted-ID
        return {c.name.split("~")[0]: c.phase for c in s.scalars(sa.select(models.Cluster))}


def test_removed_resource_is_destroyed_by_apply(served: Plane, velyrix: Any, tmp_path: Path) -> None:
    tf = tmp_path / "main.tf"
    tf.write_text(HEAD + cluster("a", "alpha", 4) + cluster("b", "beta", 2))
    planned = velyrix("plan", str(tf))
    assert planned.exit_code == 0, planned.stderr
    assert "Plan: 2 to add, 0 to change, 0 to destroy." in planned.stdout
    assert velyrix("apply", str(tf), "-auto-approve").exit_code == 0
    assert phases(served) == {"alpha": "Ready", "beta": "Ready"}

    tf.write_text(HEAD + cluster("a", "alpha", 4))  # beta removed from the configuration
    as_json = json.loads(velyrix("plan", str(tf), "--json").stdout)
    actions = {c["address"]: c["action"] for c in as_json["changes"]}
    assert actions == {"velyrix_cluster.b": "delete", "velyrix_cluster.a": "noop"}
    shown = velyrix("plan", str(tf))
    assert "- velyrix_cluster.b will be destroyed" in shown.stdout
    assert "Plan: 0 to add, 0 to change, 1 to destroy." in shown.stdout

    applied = velyrix("apply", str(tf), "-auto-approve")
    assert applied.exit_code == 0, applied.stdout + applied.stderr
    assert "beta: destroyed" in applied.stdout
    assert phases(served) == {"alpha": "Ready", "beta": "Deleted"}
    again = velyrix("plan", str(tf))
    assert "Plan: 0 to add, 0 to change, 0 to destroy." in again.stdout


def test_saved_plan_applies_exactly_and_is_refused_once_the_state_moved(
    served: Plane, velyrix: Any, tmp_path: Path
) -> None:
    tf = tmp_path / "main.tf"
    tf.write_text(HEAD + cluster("a", "alpha", 4))
    saved = tmp_path / "a.plan"
    made = velyrix("plan", str(tf), "-out", str(saved))
    assert made.exit_code == 0 and "velyrix apply" in made.stdout and str(saved) in made.stdout
    assert saved.stat().st_mode & 0o077 == 0
    tf.write_text(HEAD + cluster("a", "alpha", 6))  # the file changes after the plan was saved
    done = velyrix("apply", str(saved))  # no confirmation for a saved plan, as in Terraform
    assert done.exit_code == 0, done.stdout + done.stderr
    with served.app.state.sessionmaker() as s:
        assert s.scalar(sa.select(models.Cluster.node_count)) == 4  # the saved plan, not the new file

    stale = tmp_path / "b.plan"
    assert velyrix("plan", str(tf), "-out", str(stale)).exit_code == 0
    assert velyrix("apply", str(tf), "-auto-approve").exit_code == 0  # the state moves: 4 -> 6 nodes
    refused = velyrix("apply", str(stale))
    assert refused.exit_code == 2 and "state changed since this plan was saved" in refused.stderr


def test_target_refresh_only_prevent_destroy_and_ignore_changes(served: Plane, velyrix: Any, tmp_path: Path) -> None:
    tf = tmp_path / "main.tf"
    guarded = "lifecycle {\n    prevent_destroy = true\n    ignore_changes  = [node_count]\n  }"
    tf.write_text(HEAD + cluster("a", "alpha", 2, guarded) + cluster("b", "beta", 2))
    only_a = velyrix("apply", str(tf), "-auto-approve", "-target", "velyrix_cluster.a")
    assert only_a.exit_code == 0, only_a.stdout + only_a.stderr
    assert "Plan: 1 to add" in only_a.stdout and set(phases(served)) == {"alpha"}

    tf.write_text(HEAD + cluster("a", "alpha", 5, guarded) + cluster("b", "beta", 2))
    plan_a = json.loads(velyrix("plan", str(tf), "--json", "-target", "velyrix_cluster.a").stdout)
    assert [(c["address"], c["action"]) for c in plan_a["changes"]] == [("velyrix_cluster.a", "noop")]

    refresh = velyrix("plan", str(tf), "-refresh-only")
    assert refresh.exit_code == 0 and "velyrix_cluster.a (alpha): Ready, 2 nodes" in refresh.stdout
    assert "nothing was changed" in refresh.stdout and set(phases(served)) == {"alpha"}

    destroy = velyrix("destroy", str(tf), "-auto-approve", "-target", "velyrix_cluster.a")
    assert destroy.exit_code == 2 and "prevent_destroy" in destroy.stderr
    replaced = HEAD + cluster("a", "alpha", 2, guarded).replace("hgx-h200-8g", "hgx-h100-8g")
    tf.write_text(replaced)
    refused = velyrix("apply", str(tf), "-auto-approve")
    assert refused.exit_code == 2 and "prevent_destroy" in refused.stderr
    assert phases(served) == {"alpha": "Ready"}


def test_count_instances_are_created_and_the_dropped_one_destroyed(served: Plane, velyrix: Any, tmp_path: Path) -> None:
    tf = tmp_path / "main.tf"
    text = HEAD + 'variable "n" {\n  default = 2\n}\n' + cluster("pool", "pool-${count.index}", 2, "count = var.n")
    tf.write_text(text)
    made = velyrix("apply", str(tf), "-auto-approve")
    assert made.exit_code == 0, made.stdout + made.stderr
    assert "velyrix_cluster.pool[1] will be created" in made.stdout
    assert phases(served) == {"pool-0": "Ready", "pool-1": "Ready"}
    shrunk = velyrix("apply", str(tf), "-auto-approve", "-var", "n=1")
    assert shrunk.exit_code == 0, shrunk.stdout + shrunk.stderr
    assert "- velyrix_cluster.pool[1] will be destroyed" in shrunk.stdout
    assert phases(served) == {"pool-0": "Ready", "pool-1": "Deleted"}
