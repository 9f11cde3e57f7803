"""``velyrix_rollout`` in HCL: the issue's example (one-line blocks with commas) loads; every mistake is
reported at once with file:line:column and the closest valid value; the CLI exits 2 without a traceback.
The planner blocks a window shorter than one wave and a full-size cluster without spares."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.rollouts.conftest import EXAMPLE, example_spec
from velyrix import errors
from velyrix.declarations import rollout as decl
from velyrix.planners import rollout as planner


def test_the_issues_example_loads_with_its_one_line_blocks() -> None:
    (spec,) = decl.loads(EXAMPLE.read_text(), "rollout.tf")
    assert (spec.canary_nodes, spec.canary_soak_s, spec.max_unavailable) == (4, 7200.0, "10%")
    assert spec.window == decl.WindowSpec(("sat", "sun"), "02:00", 6, "UTC")
    assert spec.target_node_type == "hgx-h200-8g" and spec.rollback == "automatic"


def test_every_mistake_is_reported_with_its_line_and_the_closest_value() -> None:
    text = (
        EXAMPLE.read_text()
        .replace('"gpu_driver"', '"gpu_drivr"')
        .replace('"sat"', '"saturday"')
        .replace('rollback = "automatic"', 'rolback = "automatic"')
        .replace('stages    = ["staging", "canary", "production"]', 'stages = ["production", "canary"]')
    )
    with pytest.raises(errors.SpecError) as caught:
        decl.loads(text, "r.tf")
    rendered = [d.render() for d in caught.value.diagnostics]
    assert "r.tf:3:3: unknown component 'gpu_drivr'" in rendered[1] and "did you mean 'gpu_driver'" in rendered[1]
    assert any(r.startswith("r.tf:12:3: unknown attribute 'rolback'") and "'rollback'" in r for r in rendered)
    assert any(r.startswith("r.tf:9:3:") and "did you mean 'sat'" in r for r in rendered)
    assert any(r.startswith("r.tf:6:3:") and "end with" in r for r in rendered)


def test_the_cli_refuses_a_bad_file_with_exit_code_2(velyrix: Any, tmp_path: Any) -> None:
    bad = tmp_path / "r.tf"
    bad.write_text(EXAMPLE.read_text().replace("hours = 6", "hours = 30"))
    result = velyrix("rollout", "plan", str(bad))
    assert result.exit_code == 2
    assert "r.tf:9:3: window hours is a whole number 1..24, got 30" in result.stderr
    assert "Traceback" not in result.stderr


def _nodes(free: int, cluster: int) -> list[planner.NodeView]:
    installed = {"gpu_driver": "570.133.20", "gpu_vbios": "96.00.9F.00.01", "cuda": "12.8"}
    return [
        planner.NodeView(
            f"n{i:03d}", "hgx-h200-8g", "su0", installed, "c1" if i >= free else None, "t1" if i >= free else None
        )
        for i in range(free + cluster)
    ]


def test_a_window_shorter_than_one_wave_and_a_full_size_cluster_without_spares_block() -> None:
    now = dt.datetime(2026, 12, 7, tzinfo=dt.UTC)
    short = decl.WindowSpec(("sat",), "02:00", 1)  # a VBIOS wave: 10 + 25 + 30 minutes
    cluster = planner.ClusterView("c1", "t1", 10, full_size=True, window=short, notice_days=5)
    vbios = example_spec(component="gpu_vbios", version="96.00.A5.00.01")
    result = planner.plan(vbios, _nodes(8, 10), [cluster], now)
    codes = {b.code for b in result.blocks}
    assert codes == {"window_too_short", "no_spare"}
    ok = planner.ClusterView("c1", "t1", 10, window=decl.WindowSpec(("sat",), "02:00", 6), notice_days=5)
    result = planner.plan(example_spec(), _nodes(12, 10), [ok], now)
    assert result.blocks == []
    tenant = [w for w in result.waves if w.cluster]
    assert all(w.window_start and w.window_start.strftime("%a %H:%M") == "Sat 02:00" for w in tenant)
    assert all(w.window_start >= now + dt.timedelta(hours=120) for w in tenant if w.window_start)
    assert max(len(w.nodes) for w in tenant) == 1  # 10% of a 10-node cluster
