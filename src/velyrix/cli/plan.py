"""``velyrix plan FILE``: read a declaration and print each cluster's plan and monthly price."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from velyrix.cli import common, fabric_views, plain_layout, storage_views, tables

# Renderers of optional plan sections, keyed by the section's JSON key; each takes (console, section).
SECTION_RENDERERS: dict[str, Callable[[Any, dict[str, Any]], None]] = {}
SECTION_RENDERERS.update(storage_views.RENDERERS)
SECTION_RENDERERS.update(fabric_views.RENDERERS)


def register(app: typer.Typer) -> None:
    app.command(name="plan", help=PLAN_HELP)(plan)


PLAN_HELP = """Plan the clusters declared in FILE: GPUs, nodes, fabric, storage per tier and the monthly \
list price, line by line. Nothing is created.

Examples:

  velyrix plan examples/acme-pretrain.tf

  velyrix plan cluster.tf -var node_count=32 --json
"""


def plan(
    file: Path = typer.Argument(
        ...,
        help="HCL file (or .tf.json, or a directory of them) with velyrix_cluster resources (Terraform syntax).",
        show_default=False,
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON (schema: docs/plan-schema.md)."),
    var: list[str] = typer.Option(
        None, "-var", "--var", metavar="NAME=VALUE", help="Set a variable declared in FILE (repeatable)."
    ),
    var_file: list[Path] = typer.Option(
        None, "-var-file", "--var-file", metavar="FILE", help="Read variable values from a .tfvars file (repeatable)."
    ),
    out: Path = typer.Option(
        None, "-out", "--out", metavar="FILE", help="Save the plan against the control plane for velyrix apply FILE."
    ),
    target: list[str] = typer.Option(
        None, "-target", "--target", metavar="ADDRESS", help="Only plan this resource address (repeatable)."
    ),
    refresh_only: bool = typer.Option(
        False, "-refresh-only", "--refresh-only", help="Only read the live clusters and report drift."
    ),
    offline: bool = typer.Option(False, "--offline", help="Do not compare with the control plane even when logged in."),
    simulate: bool = typer.Option(
        False,
        "--simulate",
        help="Also run the seeded Monte Carlo of goodput (2,000 runs of 30 days): its 95% CI and where one run "
        "lands. Without it the plan gives the expected ETTR in closed form.",
    ),
) -> None:
    import dataclasses

    from velyrix.cli import state
    from velyrix.declarations import loader
    from velyrix.planners import plan as planner

    spec_file = loader.load(file, variables=common.parse_vars(var), var_files=var_file or [])
    shown = dataclasses.replace(
        spec_file, clusters=tuple(c for c in spec_file.clusters if state.matches(c.address, target or []))
    )
    result = planner.plan_file(shown, simulate=simulate)
    _add_connectivity(result, file, var, var_file)
    common.require_finite(result, "the plan")
    against_state = bool(out or refresh_only or (not offline and state.has_endpoint()))
    if not against_state:
        if json_out:
            common.print_json(result)
        else:
            render(result)
        return
    _plan_against_state(spec_file, result, json_out, out, target or [], refresh_only, file)


def _add_connectivity(result: dict[str, Any], file: Path, var: list[str] | None, var_file: list[Path] | None) -> None:
    """The configuration's private links, BGP sessions and VPNs, priced, in ``result["connectivity"]``."""
    if not _may_declare_connectivity(file):
        return  # only clusters: the connectivity loader (and its imports) would find nothing
    from velyrix.declarations import connectivity
    from velyrix.planners import connectivity as conn_planner

    conn = connectivity.load(file, variables=common.parse_vars(var), var_files=var_file or [])
    if not conn.empty():
        result["connectivity"] = conn_planner.plan(conn)
        result["total_monthly_usd"] = round(result["total_monthly_usd"] + result["connectivity"]["monthly_usd"], 2)


def _may_declare_connectivity(file: Path) -> bool:
    """Whether the configuration at ``file`` (parsed once per process: declarations/files.py) has a resource other
    than a ``velyrix_cluster``, or a module that could hold one."""
    from velyrix.declarations import files

    roots, _ = files.read_configuration(Path(file))
    blocks = [b for root in roots for b in root.blocks]
    return any(b.type == "module" or (b.type == "resource" and b.labels[:1] != ["velyrix_cluster"]) for b in blocks)


def _plan_against_state(
    spec_file: Any,
    result: dict[str, Any],
    json_out: bool,
    out: Path | None,
    target: list[str],
    refresh_only: bool,
    file: Path,
) -> None:
    """The plan compared with the control plane's state: creations, updates and destructions."""
    from velyrix.cli import apply, state
    from velyrix.cli import client as client_mod

    client = client_mod.Client.from_login()
    live = state.managed(client)
    con = common.console()
    if refresh_only:
        if json_out:
            common.print_json({"refresh": {a: {"phase": c["status"]["phase"], "id": c["id"]} for a, c in live.items()}})
        else:
            apply.refresh_report(con, spec_file, live, target)
        return
    planned = state.changes(spec_file, live, apply.diff, target)
    if out is not None:
        state.save(out, planned, state.fingerprint(live), client.endpoint, str(file))
    if json_out:
        result["changes"] = [{k: v for k, v in c.to_dict().items() if k != "body"} for c in planned]
        common.print_json(result)
        return
    render(result)
    apply.render_changes(con, planned)
    if out is not None:
        con.print(f"\nSaved the plan to {out}. To perform exactly these actions, run: velyrix apply {out}")


def render(result: dict[str, Any]) -> None:
    """Print a plan (as returned by ``planners.plan.plan_file``) as tables (``cli/tables.py``: rich's on a
    terminal, the same text without rich elsewhere)."""
    con = tables.console()
    for res in result["resources"]:
        summary = tables.Table(
            title=plain_layout.escape(f"{res['address']}  ({res['name']}, {res['region']})"),
            show_header=False,
            title_justify="left",
            title_style="bold",
        )
        summary.add_column("key", style="cyan")
        summary.add_column("value")
        summary.add_row("GPUs", f"{res['gpus']:,} x {res['gpu_model']}")
        summary.add_row("Nodes", f"{res['nodes']:,} x {res['node_type']}")
        summary.add_row("Fabric", res["fabric"])
        summary.add_row("Scheduler", res["scheduler"])
        storage = ", ".join(f"{k} = {v:,g} TB" for k, v in res["storage"].items() if v > 0) or "none"
        summary.add_row("Storage", storage)
        summary.add_row("Acceptance tests", ", ".join(res["acceptance"]) or "none")
        con.print(summary)
        for key, renderer in SECTION_RENDERERS.items():
            if res.get(key):
                renderer(con, res[key])
        costs = tables.Table(title="Monthly list price (USD)", title_justify="left", title_style="bold")
        for col, justify in (
            ("Item", "left"),
            ("Quantity", "right"),
            ("Unit", "left"),
            ("Unit price", "right"),
            ("Monthly", "right"),
        ):
            costs.add_column(col, justify=justify)
        for line in res["cost"]["lines"]:
            costs.add_row(
                line["item"],
                f"{line['quantity']:,.2f}".rstrip("0").rstrip("."),
                line["unit"],
                f"${line['unit_price_usd']:,.2f}",
                f"${line['monthly_usd']:,.2f}",
            )
        costs.add_row("[bold]Total[/]", "", "", "", f"[bold]${res['cost']['monthly_usd']:,.2f}[/]")
        con.print(costs)
    if result.get("connectivity"):
        from velyrix.cli import connectivity_views

        connectivity_views.render(con, result["connectivity"])
    if len(result["resources"]) > 1 or result.get("connectivity"):
        con.print(f"[bold]All resources: ${result['total_monthly_usd']:,.2f} per month[/]")
