"""Grafana dashboards: generated from code, checked in unchanged, and every query names our metrics."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from velyrix.agent import dashboards, exporter

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy" / "grafana"
RULES = ROOT / "deploy" / "prometheus" / "velyrix-rules.yml"
PROMQL_FUNCS_AND_WORDS = {
    "sum",
    "avg",
    "max",
    "min",
    "count",
    "by",
    "without",
    "rate",
    "increase",
    "sum_over_time",
    "or",
    "vector",
    "on",
    "group_left",
    "label_values",
}


def recorded() -> set[str]:
    return {r["record"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if "record" in r}


def every_query() -> list[tuple[str, str, str]]:
    return [(b.uid, p.title, expr) for b in dashboards.DASHBOARDS for p in b.panels for expr, _ in p.queries]


def test_checked_in_dashboards_are_the_generated_ones() -> None:
    rendered = dashboards.render_all()
    assert sorted(p.name for p in GRAFANA.glob("*.json")) == sorted(rendered)
    for name, text in rendered.items():
        assert (GRAFANA / name).read_text() == text, f"regenerate: python -m velyrix.agent.dashboards {GRAFANA}"


def test_fleet_cluster_and_job_dashboards_exist() -> None:
    titles = {json.loads((GRAFANA / n).read_text())["title"] for n in dashboards.render_all()}
    assert titles == {"Velyrix / Fleet", "Velyrix / Cluster nodes", "Velyrix / Job"}


def test_every_panel_query_names_a_metric_we_export_or_record() -> None:
    known = exporter.exported_metric_names() | recorded()
    for uid, title, expr in every_query():
        # strip label matchers, strings and durations, then every remaining identifier must be known
        bare = re.sub(r'\{[^}]*\}|"[^"]*"|\[[^\]]*\]', " ", expr)
        names = {
            n
            for n in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", bare)
            if n not in PROMQL_FUNCS_AND_WORDS and not n.startswith("$")
        }
        # label names inside by (...) / without (...) are not metrics
        labels = {
            lab for grp in re.findall(r"(?:by|without|on)\s*\(([^)]*)\)", bare) for lab in re.findall(r"\w+", grp)
        }
        metrics = names - labels
        assert metrics, f"{uid} / {title}: no metric in {expr!r}"
        assert metrics <= known, f"{uid} / {title}: unknown {sorted(metrics - known)} in {expr!r}"


def test_template_variables_query_exported_labels() -> None:
    for board in dashboards.DASHBOARDS:
        for var in board.variables:
            if var["type"] == "query":
                metric = re.search(r"label_values\((\w+),", var["query"]["query"]).group(1)
                assert metric in exporter.exported_metric_names()


def test_dashboards_carry_what_grafana_import_and_its_model_expect() -> None:
    for board in dashboards.DASHBOARDS:
        data = dashboards.to_json(board)
        assert data["annotations"]["list"][0]["builtIn"] == 1
        assert data["__inputs"][0]["pluginId"] == "prometheus"
        for var in data["templating"]["list"]:
            assert "definition" not in var and var.get("allValue", "") is not None
        for panel in data["panels"]:
            if panel["type"] == "stat":
                assert panel["fieldConfig"]["defaults"]["noValue"] == "0"  # 0, not "No data"
