"""``velyrix health``: the health engine from the command line (evaluation on the twin, XID lookup)."""

from __future__ import annotations

from pathlib import Path

import typer

health_app = typer.Typer(
    name="health", help="Node health: evaluate policies on the twin, look up XIDs.", no_args_is_help=True
)

EVALUATE_HELP = """Run the digital twin for a simulated period with failures at the published rates (some with
precursors) under three policies: none, reactive (act after a failure) and Velyrix's proactive engine.
Prints job interruptions, failures caught before job damage, lead time, false quarantines, spares and
GPU-hours lost per policy.

Examples:

  velyrix health evaluate --days 90 --nodes 1024 --seed 1

  velyrix health evaluate --days 7 --nodes 128 --json --chart health.png
"""


def register(app: typer.Typer) -> None:
    from velyrix.cli import agent_check

    # the same command as ``velyrix agent check``, next to the other health commands
    health_app.command("check", help=agent_check.CHECK_HELP)(agent_check.check)
    app.add_typer(health_app)


@health_app.command("evaluate", help=EVALUATE_HELP)
def evaluate(
    days: float = typer.Option(90.0, "--days", help="Simulated days."),
    nodes: int = typer.Option(1024, "--nodes", help="Nodes in the simulated fleet (hgx-h200-8g)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the twin, the jobs and the noise."),
    poll_s: float = typer.Option(3600.0, "--poll", help="Simulated seconds between verdicts."),
    precursor_h: float | None = typer.Option(
        None, "--precursor-h", help="Hours precursors run before their fault (default: the twin's 6)."
    ),
    workers: int = typer.Option(2, "--workers", help="Processes (one policy each, at most 3)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    chart: Path | None = typer.Option(None, "--chart", metavar="FILE", help="Write a bar chart (PNG/SVG)."),
) -> None:
    from velyrix.cli import common
    from velyrix.ops.study import evaluation as health_evaluation

    cfg = health_evaluation.EvalConfig(days=days, nodes=nodes, seed=seed, poll_s=poll_s, precursor_h=precursor_h)
    cfg.validate()
    result = health_evaluation.evaluate(cfg, workers=max(1, workers))
    if chart is not None:
        _chart(result, chart)
    if as_json:
        common.print_json(result)
        return
    from rich.table import Table

    table = Table(title=f"Health policies: {nodes} nodes, {days:g} simulated days, seed {seed}")
    table.add_column("figure", no_wrap=True)  # names are the JSON keys: never cut them
    for p in health_evaluation.POLICIES:
        table.add_column(p, justify="right")
    for key in result["policies"]["none"]:
        table.add_row(key, *(_cell(result["policies"][p][key]) for p in health_evaluation.POLICIES))
    out = common.console()
    out.print(table)
    cmp = result["proactive_vs_reactive"]
    out.print(
        f"proactive vs reactive: {cmp['precursor_interruption_reduction_pct']}% fewer interruptions on faults "
        f"with precursors, {cmp['all_interruption_reduction_pct']}% fewer overall"
    )


def _cell(value: object) -> str:
    """A table cell: mappings as ``key: n`` lines, ``-`` when empty."""
    if isinstance(value, dict):
        return "\n".join(f"{k}: {v}" for k, v in value.items()) or "-"
    return str(value)


def _chart(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    policies = list(result["policies"])
    keys = [
        "job_interruptions",
        "precursor_job_interruptions",
        "failures_caught_before_job_damage",
        "false_quarantines",
    ]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(keys)
    for k, key in enumerate(keys):
        ax1.bar(
            [i + k * width for i in range(len(policies))],
            [result["policies"][p][key] for p in policies],
            width,
            label=key.replace("_", " "),
        )
    ax1.set_xticks([i + 0.4 - width / 2 for i in range(len(policies))], policies)
    ax1.set_ylabel("count")
    ax1.legend(fontsize=7)
    ax2.bar(policies, [result["policies"][p]["gpu_hours_lost"] for p in policies], color="tab:red")
    ax2.set_ylabel("GPU-hours lost")
    cfg = result["config"]
    fig.suptitle(f"velyrix health evaluate: {cfg['nodes']} nodes, {cfg['days']:g} days, seed {cfg['seed']}")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


@health_app.command("xid", help="Explain an XID: NVIDIA's meaning and buckets, and what Velyrix does.")
def xid(
    code: int = typer.Argument(..., help="XID number, e.g. 79."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    import dataclasses

    from velyrix.catalog import health as catalog_health
    from velyrix.cli import common

    info = catalog_health.xid(code)
    if as_json:
        common.print_json(dataclasses.asdict(info))
        return
    out = common.console()
    out.print(f"[bold]XID {info.code} {info.mnemonic}[/]: {info.meaning}")
    out.print(f"NVIDIA: immediate {info.nvidia_immediate}; investigatory {info.nvidia_investigatory}")
    out.print(f"Velyrix: {info.action} (level {info.level}; escalates on recurrence: {info.escalates})")
    if info.note:
        out.print(f"Note: {info.note}")
    out.print(f"Source: {info.source}")
