"""``velyrix health evaluate`` and ``velyrix health xid``."""

from __future__ import annotations

import json


def test_evaluate_prints_json_per_policy_and_writes_a_chart(velyrix, tmp_path):
    chart = tmp_path / "h.png"
    res = velyrix(
        "health",
        "evaluate",
        "--days",
        "2",
        "--nodes",
        "16",
        "--seed",
        "3",
        "--workers",
        "1",
        "--json",
        "--chart",
        str(chart),
    )
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert set(data["policies"]) == {"none", "reactive", "proactive"}
    assert chart.stat().st_size > 1000


def test_evaluate_table_shows_every_figure_name_whole(velyrix, monkeypatch):
    monkeypatch.setenv("COLUMNS", "64")
    res = velyrix("health", "evaluate", "--days", "2", "--nodes", "16", "--seed", "3", "--workers", "1")
    assert res.exit_code == 0, res.stderr
    for name in ("failures_caught_before_job_damage", "false_quarantines_pct_nodes_per_month", "gpu_hours_lost"):
        assert name in res.stdout


def test_evaluate_rejects_bad_input_with_exit_2(velyrix):
    res = velyrix("health", "evaluate", "--nodes", "0")
    assert res.exit_code == 2 and "positive" in res.stderr and "Traceback" not in res.stderr


def test_xid_lookup_and_unknown_xid(velyrix):
    res = velyrix("health", "xid", "48", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["action"] == "REBOOT"
    res = velyrix("health", "xid", "47")
    assert res.exit_code == 2 and "did you mean" in res.stderr


def test_check_quick_on_a_healthy_twin_node_passes(velyrix):
    res = velyrix("health", "check", "--quick", "--collector", "sim", "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["tier"] == "quick" and len(data["checks"]) == 8 and data["verdict"]["action"] == "IGNORE"


def test_check_fails_with_exit_1_when_a_gpu_fell_off_the_bus(velyrix):
    res = velyrix("health", "check", "--quick", "--collector", "sim", "--sim-fault", "xid79:2", "--json")
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert data["verdict"]["action"] == "REBOOT"
    assert any(c["name"] == "gpu_state" and c["status"] == "fail" for c in data["checks"])


def test_agent_check_is_wired_under_the_agent_group(velyrix):
    res = velyrix("agent", "check", "--deep", "--collector", "sim", "--sim-fault", "slow_gpu:3", "--json")
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert data["tier"] == "deep" and data["verdict"]["action"] == "DRAIN_AFTER_JOB"
    assert {c["name"] for c in data["checks"] if c["status"] == "fail"} >= {"gemm_short", "gemm_long"}
