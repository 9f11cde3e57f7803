"""Renderings of a utilization report (``reports.build``): terminal table, CSV, JSON, HTML with charts."""

from __future__ import annotations

import csv
import html
import io
import json
from typing import Any

FORMATS = ("table", "csv", "json", "html")
_TEAM_COLS = (
    "team",
    "cost_center",
    "gpu_hours",
    "busy_gpu_hours",
    "utilization",
    "jobs",
    "wait_mean_s",
    "wait_p95_s",
    "fairshare",
)
_CC_COLS = ("cost_center", "gpu_hours", "busy_gpu_hours", "utilization", "jobs", "wait_mean_s", "wait_p95_s")


def render(report: dict[str, Any], fmt: str) -> str:
    """``report`` as text in ``fmt`` (one of ``FORMATS``)."""
    return {"table": table, "csv": to_csv, "json": to_json, "html": to_html}[fmt](report)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return "inf" if v == float("inf") else f"{v:,.2f}"
    return str(v)


def table(report: dict[str, Any]) -> str:
    """Terminal tables (rich): per team, per cost center, top users."""
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, width=140, force_terminal=False, color_system=None)
    p = report["period"]
    t = report["totals"]
    console.print(
        f"GPU utilization {p['from']} .. {p['to']}: {t['gpu_hours']:,.2f} GPU-hours allocated, "
        f"{t['jobs']} jobs, {t['users']} users"
    )
    for title, rows, cols in (
        ("Per team", report["teams"], _TEAM_COLS),
        ("Per cost center", report["cost_centers"], _CC_COLS),
        ("Top users", report["top_users"], ("user", "gpu_hours", "jobs")),
    ):
        tab = Table(title=title, title_justify="left")
        for c in cols:
            tab.add_column(c.replace("_", " "), justify="left" if c in ("team", "cost_center", "user") else "right")
        for r in rows:
            tab.add_row(*(_cell(r.get(c)) for c in cols))
        console.print(tab)
    return buf.getvalue()


def to_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, default=lambda v: None) + "\n"


def to_csv(report: dict[str, Any]) -> str:
    """One CSV: a ``level`` column (team | cost_center | user) then the union of the columns."""
    cols = (
        "level",
        "name",
        "cost_center",
        "gpu_hours",
        "busy_gpu_hours",
        "utilization",
        "jobs",
        "wait_mean_s",
        "wait_p95_s",
        "fairshare",
    )
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for level, key, rows in (
        ("team", "team", report["teams"]),
        ("cost_center", "cost_center", report["cost_centers"]),
        ("user", "user", report["top_users"]),
    ):
        for r in rows:
            vals = {**r, "level": level, "name": r[key]}
            if level != "team":
                vals.pop("cost_center", None)
            w.writerow(["" if vals.get(c) is None else vals.get(c) for c in cols])
    return buf.getvalue()


def _bar_svg(labels: list[str], series: dict[str, list[float]], ylabel: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.8 / max(1, len(series))
    for k, (name, values) in enumerate(series.items()):
        ax.bar([i + k * width for i in range(len(labels))], values, width, label=name)
    ax.set_xticks([i + width * (len(series) - 1) / 2 for i in range(len(labels))], labels, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    if len(series) > 1:
        ax.legend()
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    svg = buf.getvalue()
    return svg[svg.index("<svg") :]


def _html_table(rows: list[dict[str, Any]], cols: tuple[str, ...]) -> str:
    head = "".join(f"<th>{html.escape(c.replace('_', ' '))}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r.get(c)))}</td>" for c in cols) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def to_html(report: dict[str, Any], max_bars: int = 30) -> str:
    """A self-contained HTML page: totals, tables, and SVG bar charts (GPU-hours per team and per cost
    center, allocated vs busy when telemetry was given; mean wait per team)."""
    p, t = report["period"], report["totals"]
    teams = report["teams"][:max_bars]
    ccs = report["cost_centers"][:max_bars]
    charts = []
    if teams:
        series = {"allocated": [r["gpu_hours"] for r in teams]}
        if t.get("busy_gpu_hours") is not None:
            series["busy"] = [r["busy_gpu_hours"] or 0.0 for r in teams]
        charts.append(("GPU-hours per team", _bar_svg([r["team"] for r in teams], series, "GPU-hours")))
        charts.append(
            (
                "Mean queue wait per team",
                _bar_svg([r["team"] for r in teams], {"wait": [r["wait_mean_s"] or 0.0 for r in teams]}, "seconds"),
            )
        )
    if ccs:
        charts.append(
            (
                "GPU-hours per cost center",
                _bar_svg([r["cost_center"] for r in ccs], {"allocated": [r["gpu_hours"] for r in ccs]}, "GPU-hours"),
            )
        )
    title = f"GPU utilization {p['from']} .. {p['to']}"
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child{text-align:left}"
        "figure{display:inline-block;margin:0 1em}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Cluster {html.escape(str(report.get('cluster') or '-'))}: {t['gpu_hours']:,.2f} GPU-hours allocated"
        + (f", {t['busy_gpu_hours']:,.2f} busy" if t.get("busy_gpu_hours") is not None else "")
        + f", {t['jobs']} jobs, {t['users']} users.</p>",
    ]
    for caption, svg in charts:
        parts.append(f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>")
    parts += [
        "<h2>Per team</h2>",
        _html_table(report["teams"], _TEAM_COLS),
        "<h2>Per cost center</h2>",
        _html_table(report["cost_centers"], _CC_COLS),
        "<h2>Top users</h2>",
        _html_table(report["top_users"], ("user", "gpu_hours", "jobs")),
        "</body></html>\n",
    ]
    return "\n".join(parts)
