"""``velyrix checkpoint``, ``velyrix goodput`` and the storage/goodput sections of ``velyrix plan``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..conftest import EXAMPLES

LLAMA3_8B = [
    "--hidden",
    "4096",
    "--ffn",
    "14336",
    "--layers",
    "32",
    "--heads",
    "32",
    "--kv-heads",
    "8",
    "--vocab",
    "128256",
]


def test_checkpoint_json_has_the_issue_keys(velyrix) -> None:
    r = velyrix(
        "checkpoint",
        "--params",
        "405B",
        "--tp",
        "8",
        "--pp",
        "16",
        "--zero",
        "1",
        "--gpus",
        "512",
        "--tier-tb",
        "800",
        "--interval",
        "1800",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["size_bytes"] == pytest.approx(405e9 * 14)
    assert data["per_rank_bytes"] == pytest.approx(2 * 405e9 / 128 + 12 * 405e9 / 512)
    assert data["write_gb_s"] == pytest.approx(384) and data["write_gbps"] == pytest.approx(384 * 8)
    assert data["blocking_s"] == pytest.approx(5670 / 384)
    assert data["size_gib"] == pytest.approx(405e9 * 14 / 2**30)
    assert [row["case"] for row in data["sensitivity"]] == [
        "mean bandwidth",
        "bandwidth at low percentile (planned)",
        "failure rate x2",
    ]


def test_checkpoint_from_architecture_and_auto_capacity(velyrix) -> None:
    r = velyrix("checkpoint", *LLAMA3_8B, "--zero", "3", "--gpus", "8", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["params"] == 8_030_261_248 and data["tier_tb_chosen_by"] != "declared"
    assert data["interval_auto"] and data["meets"]


def test_checkpoint_human_output_has_tables(velyrix) -> None:
    r = velyrix("checkpoint", "--params", "70e9", "--tp", "8", "--gpus", "64", "--tier-tb", "200")
    assert r.exit_code == 0, r.stderr
    assert "Checkpoint" in r.stdout and "GiB" in r.stdout and "Sensitivity" in r.stdout


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--params", "405e9", "--gpus", "0"], "GPU count must be"),
        (["--params", "-405e9", "--gpus", "8"], "not a parameter count"),
        (["--params", "405e9", "--tp", "8", "--pp", "16", "--dp", "3", "--gpus", "512"], "does not divide"),
        (["--params", "405e9", "--gpus", "8", "--tier-tb", "-5"], "capacity of tier"),
        (["--params", "405e9", "--gpus", "8", "--interval", "soon"], "neither a number"),
        (["--params", "405e9", "--gpus", "8", "--tier", "parallel-fs"], "unknown storage tier"),
        (["--params", "405e9", "--gpus", "8", "--mode", "lazy"], "sync or async"),
        (["--gpus", "8"], "model is missing"),
        (["--hidden", "4096", "--gpus", "8"], "architecture is incomplete"),
    ],
)
def test_checkpoint_bad_input_exits_2_with_what_was_expected(velyrix, args: list[str], text: str) -> None:
    r = velyrix("checkpoint", *args)
    assert r.exit_code == 2
    assert text in r.stderr and "Traceback" not in r.stderr


def test_goodput_json_has_the_issue_keys(velyrix) -> None:
    r = velyrix(
        "goodput",
        "--gpus",
        "16384",
        "--node-failure-rate",
        "3.79",
        "--save-seconds",
        "30",
        "--restart-seconds",
        "600",
        "--replicas",
        "500",
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    for key in ("mttf_h", "interval_young_s", "interval_daly_s", "ettr", "ettr_simulated", "ettr_simulated_ci"):
        assert key in data
    assert data["mttf_h"] == pytest.approx(3.09, abs=0.01)
    lo, hi = data["ettr_simulated_ci"]
    assert lo <= data["ettr_simulated"] <= hi


def test_goodput_chart_is_a_png(velyrix, tmp_path: Path) -> None:
    out = tmp_path / "ettr.png"
    r = velyrix(
        "goodput",
        "--gpus",
        "512",
        "--save-seconds",
        "15",
        "--interval",
        "1800",
        "--replicas",
        "200",
        "--chart",
        str(out),
    )
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Sensitivity" in r.stdout and "failure rate" in r.stdout


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--gpus", "0"], "GPU count"),
        (["--gpus", "8", "--save-seconds", "-1"], "save seconds"),
        (["--gpus", "8", "--node-failure-rate", "0"], "node failure rate"),
        (["--gpus", "8", "--interval", "-5"], "interval must be > 0"),
        (["--gpus", "8", "--node-type", "h200"], "unknown node type"),
    ],
)
def test_goodput_bad_input_exits_2(velyrix, args: list[str], text: str) -> None:
    r = velyrix("goodput", *args, "--replicas", "10")
    assert r.exit_code == 2 and text in r.stderr


def test_plan_of_the_405b_example_says_what_the_tier_delivers_and_the_cheapest_change(velyrix) -> None:
    r = velyrix("plan", str(EXAMPLES / "acme-405b.tf"))
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "parallel_fs 800 TB: writes 384 GB/s" in out
    assert "blocks 14.8 s per save" in out
    assert "Meets target" in out and "no:" in out
    assert "Cheapest change that meets the target" in out and "checkpoint_mode sync -> async" in out
    assert "$" in out and "Goodput" in out and "Sensitivity" in out


def test_plan_json_of_the_405b_example_has_both_sections(velyrix) -> None:
    r = velyrix("plan", str(EXAMPLES / "acme-405b.tf"), "--json")
    res = json.loads(r.stdout)["resources"][0]
    assert res["storage_plan"]["declared"]["capacity_tb"] == 800
    assert res["goodput"]["interval_s"] == 1800 and 0 < res["goodput"]["ettr"] < 1


def _spec(tmp_path: Path, workload: str) -> Path:
    text = (
        (EXAMPLES / "acme-pretrain.tf")
        .read_text()
        .replace("  # 512 GPUs, one apply, validated on delivery\n", f"  workload {{\n{workload}\n  }}\n")
    )
    path = tmp_path / "w.tf"
    path.write_text(text)
    return path


def test_plan_with_impossible_parallelism_exits_2_naming_the_resource(velyrix, tmp_path: Path) -> None:
    path = _spec(tmp_path, "    model_params = 70e9\n    tp = 8\n    pp = 3")
    r = velyrix("plan", str(path))
    assert r.exit_code == 2
    assert "velyrix_cluster.training workload" in r.stderr and "does not divide the 512 GPUs" in r.stderr
    assert f"{path}:" in r.stderr and "Traceback" not in r.stderr


def test_plan_with_auto_interval_uses_daly(velyrix, tmp_path: Path) -> None:
    path = _spec(tmp_path, '    model_params = 70e9\n    tp = 8\n    checkpoint_interval_s = "auto"')
    r = velyrix("plan", str(path), "--json")
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)["resources"][0]
    assert res["storage_plan"]["declared"]["interval_auto"]
    assert res["goodput"]["interval_s"] == pytest.approx(res["goodput"]["interval_daly_s"])
    restore = res["storage_plan"]["restore"]
    assert restore["parallel_fs_s"] > 0 and restore["object_s"] > restore["parallel_fs_s"]
    assert restore["archive_h"][0] >= 0.1
