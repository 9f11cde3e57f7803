"""The diff ``velyrix apply`` shows and acts on: a test turned off on a live cluster is a change, and the
changed values read as HCL (``parallel_fs_tb = 800``), not as Python reprs."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from velyrix.cli import apply, state
from velyrix.controlplane import specs
from velyrix.declarations import loader


def _tf(extra: str = "") -> str:
    return f"""provider "velyrix" {{ region = "us-east-1" }}
resource "velyrix_cluster" "a" {{
  name       = "acme"
  node_type  = "hgx-h200-8g"
  node_count = 4
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  {extra}
}}
"""


def _live(tf: str) -> dict[str, Any]:
    """The live object the control plane returns for ``tf`` as applied (spec = ``specs.to_body``)."""
    spec = loader.loads(tf, "live.tf").clusters[0]
    body = specs.to_body(spec)
    top = {k: body[k] for k in ("name", "region", "node_type", "node_count")}
    return {"id": "c1", **top, "spec": body, "status": {"phase": "Ready"}}


def _planned(tf: str, live: dict[str, Any]) -> state.Change:
    (change,) = state.changes(loader.loads(tf, "main.tf"), {"velyrix_cluster.a": live}, apply.diff)
    return change


def _text(change: state.Change) -> str:
    con = Console(record=True, width=200)
    apply.render_changes(con, [change])
    return con.export_text()


def test_turning_an_acceptance_test_off_on_a_live_cluster_is_an_update() -> None:
    change = _planned(_tf("acceptance {\n    ib_ports = false\n  }"), _live(_tf()))
    assert change.action == "update"
    text = _text(change)
    assert "ib_ports = true -> false" in text
    assert "Plan: 0 to add, 1 to change, 0 to destroy." in text
    # and turning it back on again is a change too
    back = _planned(_tf(), _live(_tf("acceptance {\n    ib_ports = false\n  }")))
    assert back.action == "update" and "ib_ports = false -> true" in _text(back)


def test_the_diff_prints_hcl_values_not_python_reprs() -> None:
    change = _planned(
        _tf("storage {\n    parallel_fs_tb = 800\n  }"), _live(_tf("storage {\n    parallel_fs_tb = 400\n  }"))
    )
    text = _text(change)
    assert "parallel_fs_tb = 400 -> 800" in text
    assert "{'" not in text and "800.0" not in text and "True" not in text
    created = _text(
        state.changes(loader.loads(_tf("storage {\n    parallel_fs_tb = 800\n  }"), "m.tf"), {}, apply.diff)[0]
    )
    assert "parallel_fs_tb = 800" in created and '"acme"' in created
    assert "{'" not in created and "800.0" not in created


def test_an_unchanged_cluster_with_a_test_off_is_up_to_date() -> None:
    tf = _tf("acceptance {\n    ib_ports = false\n  }")
    assert _planned(tf, _live(tf)).action == "noop"
