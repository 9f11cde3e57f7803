"""``velyrix plan FILE``: read a declaration and print each cluster's plan and monthly price."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from velyrix.cli import common, fabric_views, storage_views

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
        ..., help="HCL file with velyrix_cluster resources (Terraform syntax).", show_default=False
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON (schema: docs/plan-schema.md)."),
    var: list[str] = typer.Option(
        None, "-var", "--var", metavar="NAME=VALUE", help="Set a variable declared in FILE (repeatable)."
    ),
    var_file: list[Path] = typer.Option(
        None, "-var-file", "--var-file", metavar="FILE", help="Read variable values from a .tfvars file (repeatable)."
    ),
) -> None:
    from velyrix.declarations import loader
    from velyrix.planners import plan as planner

    spec_file = loader.load(file, variables=common.parse_vars(var), var_files=var_file or [])
    result = planner.plan_file(spec_file)
    common.require_finite(result, "the plan")
    if json_out:
        common.print_json(result)
        return
    render(result)


def render(result: dict[str, Any]) -> None:
    """Print a plan (as returned by ``planners.plan.plan_file``) with rich tables."""
    from rich.table import Table

    con = common.console()
    for res in result["resources"]:
        summary = Table(
            title=common.safe(f"{res['address']}  ({res['name']}, {res['region']})"),
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
        costs = Table(title="Monthly list price (USD)", title_justify="left", title_style="bold")
        for col, justify in (
            ("Item", "left"),
            ("Quantity", "right"),
            ("Unit", "left"),
            ("Unit price", "right"),
            ("Monthly", "right"),
        ):
            costs.add_column(col, justify=justify)  # type: ignore[arg-type]
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
    if len(result["resources"]) > 1:
        con.print(f"[bold]All resources: ${result['total_monthly_usd']:,.2f} per month[/]")
