"""The shipped Prometheus rules: promtool accepts them, their unit tests pass, and they use our metrics."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from velyrix.agent import exporter
from velyrix.catalog import health

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "velyrix-rules.yml"
TESTS = sorted((ROOT / "deploy" / "prometheus" / "tests").glob("*.test.yml"))
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool missing: apt-get install prometheus")


@needs_promtool
def test_promtool_check_rules_accepts_the_shipped_rules() -> None:
    out = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


@needs_promtool
def test_promtool_unit_tests_of_the_rules_pass() -> None:
    assert TESTS
    out = subprocess.run(
        [PROMTOOL, "test", "rules", *map(str, TESTS)], capture_output=True, text=True, check=False, cwd=TESTS[0].parent
    )
    assert out.returncode == 0, out.stdout + out.stderr


def _rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def test_rules_only_use_metrics_we_export_or_record() -> None:
    recorded = {r["record"] for r in _rules() if "record" in r}
    exported = exporter.exported_metric_names()
    for rule in _rules():
        for name in re.findall(r"\b(DCGM_FI_[A-Z_]+|velyrix_[a-z_]+|[a-z_]+:[A-Za-z_]+:[a-z0-9_]+)\b", rule["expr"]):
            assert name in exported or name in recorded, f"{rule.get('record') or rule['alert']} uses unknown {name}"


def test_fatal_xid_alert_matches_the_xid_catalog() -> None:
    fatal = {c for c in health.xid_codes() if health.xid(c).level == "fatal"}
    alert = next(r for r in _rules() if r.get("alert") == "VelyrixGPUFatalXID")
    for regex in re.findall(r'xid=~"([0-9|]+)"', alert["expr"]):
        assert {int(x) for x in regex.split("|")} == fatal


@needs_promtool
def test_example_prometheus_config_is_valid_and_loads_the_rules() -> None:
    config = RULES.parent / "prometheus.example.yml"
    out = subprocess.run([PROMTOOL, "check", "config", str(config)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "velyrix-rules.yml" in out.stdout and "SUCCESS" in out.stdout
    jobs = [c["job_name"] for c in yaml.safe_load(config.read_text())["scrape_configs"]]
    assert {"velyrix-agent", "velyrix-sim-exporter"} <= set(jobs)
