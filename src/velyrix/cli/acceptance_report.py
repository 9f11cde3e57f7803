"""A signed acceptance report rendered as tables (``velyrix report acceptance`` and ``velyrix demo``)."""

from __future__ import annotations

from typing import Any

from velyrix.cli import common


def _closeness(t: dict[str, Any]) -> tuple[bool, float]:
    return (t["passed"], t["measured"] / (t["expected"] or 1))


def _summary(table: Any, rep: dict[str, Any]) -> None:
    for col in ("test", "nodes passed", "worst node", "subject", "measured", "expected", "unit"):
        table.add_column(col)
    tests: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for node in rep["nodes"]:
        for t in node["tests"]:
            tests.setdefault(t["test"], []).append((node["name"], t))
    for test, rows in tests.items():
        name, worst = min(rows, key=lambda r: _closeness(r[1]))
        table.add_row(
            test,
            f"{sum(r[1]['passed'] for r in rows)}/{len(rows)}",
            name,
            worst["subject"],
            f"{worst['measured']:g}",
            f"{worst['expected']:g}",
            worst["unit"],
        )


def _nodes(table: Any, rep: dict[str, Any], max_nodes: int) -> None:
    for col in ("node", "SU", "serial", "GPUs", "closest to its limit", "passed"):
        table.add_column(col)
    for node in rep["nodes"][:max_nodes]:
        closest = "-"
        if node["tests"]:
            worst = min(node["tests"], key=_closeness)
            closest = (
                f"{worst['test']} {worst['subject']}: {worst['measured']:g} / {worst['expected']:g} {worst['unit']}"
            )
        table.add_row(
            node["name"],
            str(node["su"]),
            common.safe(node["serial"]),
            str(len(node["gpu_uuids"])),
            closest,
            "yes" if node["passed"] else "[red]no[/]",
        )


def _cluster_tests(table: Any, rep: dict[str, Any]) -> None:
    for col in ("test", "subject", "measured", "expected", "unit", "passed"):
        table.add_column(col)
    for r in rep["cluster_tests"]:
        table.add_row(
            r["test"],
            r["subject"],
            f"{r['measured']:g}",
            f"{r['expected']:g}",
            r["unit"],
            "yes" if r["passed"] else "[red]no[/]",
        )


def _replacements(table: Any, rep: dict[str, Any]) -> None:
    for col in ("failed node", "replaced by", "phase", "reason", "sanitized"):
        table.add_column(col)
    for r in rep["replacements"]:
        table.add_row(
            r["failed"],
            str(r["replacement"]),
            r["phase"],
            common.safe(r["reason"].split(";")[0][:100]),
            r.get("sanitize_certificate", "after delivery"),
        )


def render_report(con: Any, signed: dict[str, Any], max_nodes: int = 12) -> None:
    """Acceptance report as tables: per-test summary over nodes, worst nodes, cluster tests, replacements."""
    from rich.table import Table

    rep = signed["report"]
    c = rep["cluster"]
    verdict = "[green]PASSED[/]" if rep["passed"] else "[red]NOT PASSED[/]"
    con.print(
        f"[bold]Acceptance report[/] {c['name']} ({c['id']}): {len(rep['nodes'])} x {c['node_type']} in "
        f"{c['region']}, delivered {rep['delivered_at'][:19]} - {verdict}"
    )
    summary = Table(title="Per-node tests (worst node per test)")
    _summary(summary, rep)
    con.print(summary)
    nodes = Table(title=f"Nodes (first {min(max_nodes, len(rep['nodes']))} of {len(rep['nodes'])})")
    _nodes(nodes, rep, max_nodes)
    con.print(nodes)
    if rep["cluster_tests"]:
        ct = Table(title="Cluster tests")
        _cluster_tests(ct, rep)
        con.print(ct)
    if rep["replacements"]:
        rt = Table(title="Replacements")
        _replacements(rt, rep)
        con.print(rt)
    sig = signed["signature"]
    con.print(f"Signed {sig['algorithm']} by {sig['key_id']} - check with: velyrix verify acceptance FILE")
