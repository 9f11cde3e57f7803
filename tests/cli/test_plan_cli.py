"""``velyrix plan`` as a newcomer meets it: the seed's plan and price, JSON, help, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys

from ..conftest import EXAMPLES, ROOT


def test_plan_prints_seed_cluster_and_storage_lines(velyrix) -> None:
    result = velyrix("plan", str(EXAMPLES / "acme-pretrain.tf"))
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "512 x H200" in out and "64 x hgx-h200-8g" in out
    assert "$33,600.00" in out and "$40,000.00" in out


def test_plan_json_has_the_documented_fields(velyrix) -> None:
    result = velyrix("plan", str(EXAMPLES / "acme-pretrain.tf"), "--json")
    assert result.exit_code == 0
    plan = json.loads(result.stdout)
    (res,) = plan["resources"]
    assert (res["gpus"], res["nodes"], res["node_type"]) == (512, 64, "hgx-h200-8g")
    assert res["storage"]["parallel_fs_tb"] == 800 and res["storage"]["object_tb"] == 2000
    lines = {line["unit_price_usd"]: line for line in res["cost"]["lines"] if line["unit"] == "TB-month"}
    assert lines[42.0]["quantity"] == 800 and lines[42.0]["monthly_usd"] == 33600
    assert lines[20.0]["quantity"] == 2000 and lines[20.0]["monthly_usd"] == 40000
    gpu_line = next(line for line in res["cost"]["lines"] if line["unit"] == "GPU-hour")
    assert gpu_line["quantity"] == 512 * 730
    assert res["cost"]["monthly_usd"] == round(sum(line["monthly_usd"] for line in res["cost"]["lines"]), 2)


def test_plan_var_flag_changes_the_plan(velyrix) -> None:
    result = velyrix("plan", str(EXAMPLES / "small-h100-k8s.tf"), "-var", "node_count=8", "--json")
    assert json.loads(result.stdout)["resources"][0]["gpus"] == 64


def test_malformed_var_flag_exits_2(velyrix) -> None:
    result = velyrix("plan", str(EXAMPLES / "small-h100-k8s.tf"), "-var", "node_count")
    assert result.exit_code == 2 and "name=value" in result.stderr


def test_help_is_useful(velyrix) -> None:
    top = velyrix("--help")
    assert top.exit_code == 0 and "plan" in top.stdout and "velyrix plan examples/acme-pretrain.tf" in top.stdout
    sub = velyrix("plan", "--help")
    assert sub.exit_code == 0
    for needle in ("-var", "--json", "-var-file", "examples/acme-pretrain.tf"):
        assert needle in sub.stdout


def test_console_script_exit_code_and_no_traceback(tmp_path) -> None:
    bad = tmp_path / "bad.tf"
    bad.write_text('provider "velyrix" { region = "us-east-1" }\nresource "velyrix_cluster" "x" {\n  name = [1]\n}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "velyrix.cli.main", "plan", str(bad)], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 2
    assert f"{bad}:3:3" in proc.stderr and "Traceback" not in proc.stderr


def test_debug_flag_shows_traceback(tmp_path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "velyrix.cli.main", "--debug", "plan", str(tmp_path / "none.tf")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode != 0 and "Traceback" in proc.stderr
