"""A signed acceptance report rendered as tables (``velyrix report acceptance`` and ``velyrix demo``)."""

from __future__ import annotations

from typing import Any


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
    for col in ("test", "nodes passed", "worst node", "subject", "measured", "expected", "unit"):
        summary.add_column(col)
    tests: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for node in rep["nodes"]:
        for t in node["tests"]:
            tests.setdefault(t["test"], []).append((node["name"], t))
    for test, rows in tests.items():
        name, worst = min(rows, key=lambda r: (r[1]["passed"], r[1]["measured"] / (r[1]["expected"] or 1)))
        summary.add_row(
            test,
            f"{sum(r[1]['passed'] for r in rows)}/{len(rows)}",
            name,
            worst["subject"],
            f"{worst['measured']:g}",
            f"{worst['expected']:g}",
            worst["unit"],
        )
    con.print(summary)
    nodes = Table(title=f"Nodes (first {min(max_nodes, len(rep['nodes']))} of {len(rep['nodes'])})")
    for col in ("node", "SU", "serial", "GPUs", "closest to its limit", "passed"):
        nodes.add_column(col)
    for node in rep["nodes"][:max_nodes]:
        closest = "-"
        if node["tests"]:
            worst = min(node["tests"], key=lambda t: (t["passed"], t["measured"] / (t["expected"] or 1)))
            closest = (
                f"{worst['test']} {worst['subject']}: {worst['measured']:g} / {worst['expected']:g} {worst['unit']}"
            )
        nodes.add_row(
            node["name"],
            str(node["su"]),
            str(node["serial"]),
            str(len(node["gpu_uuids"])),
            closest,
            "yes" if node["passed"] else "[red]no[/]",
        )
    con.print(nodes)
    if rep["cluster_tests"]:
        ct = Table(title="Cluster tests")
        for col in ("test", "subject", "measured", "expected", "unit", "passed"):
            ct.add_column(col)
        for r in rep["cluster_tests"]:
            ct.add_row(
                r["test"],
                r["subject"],
                f"{r['measured']:g}",
                f"{r['expected']:g}",
                r["unit"],
                "yes" if r["passed"] else "[red]no[/]",
            )
        con.print(ct)
    if rep["replacements"]:
        rt = Table(title="Replacements")
        for col in ("failed node", "replaced by", "phase", "reason", "sanitized"):
            rt.add_column(col)
        for r in rep["replacements"]:
            rt.add_row(
                r["failed"],
                str(r["replacement"]),
                r["phase"],
                r["reason"].split(";")[0][:100],
                r.get("sanitize_certificate", "after delivery"),
            )
        con.print(rt)
    sig = signed["signature"]
    con.print(f"Signed {sig['algorithm']} by {sig['key_id']} - check with: velyrix verify acceptance FILE")
