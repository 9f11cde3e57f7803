"""``velyrix goodput``: job MTTI, Young and Daly intervals, ETTR by formula and by simulation, lost value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from velyrix import errors
from velyrix.cli import common

HELP = """Goodput of a training job: mean time to interrupt from the node failure rate, Young's and \
Daly's checkpoint intervals, the effective training time ratio (first order and by a seeded Monte Carlo \
simulation with a 95% confidence interval), the GPU-hours lost per week and their price, and a \
sensitivity table (failure rate doubled, bandwidth at its low percentile).

Examples:

  velyrix goodput --gpus 16384 --node-failure-rate 3.79 --save-seconds 30 --restart-seconds 600

  velyrix goodput --gpus 512 --save-seconds 15 --interval 1800 --chart ettr.png
"""


def register(app: typer.Typer) -> None:
    app.command(name="goodput", help=HELP)(goodput)


def goodput(
    gpus: int = typer.Option(..., "--gpus", help="GPUs of the job."),
    node_type: str = typer.Option("hgx-h200-8g", "--node-type", help="Catalog node type (GPUs per node, price)."),
    failure_rate: float = typer.Option(
        None,
        "--node-failure-rate",
        metavar="PER_1000_NODE_DAYS",
        help="Node failures per 1,000 node-days (default: catalog, 6.5).",
    ),
    save_s: float = typer.Option(60.0, "--save-seconds", help="Seconds each checkpoint save blocks training."),
    restart_s: float = typer.Option(
        None,
        "--restart-seconds",
        help="Seconds to detect, reschedule and reload (default: catalog detect + "
        "reschedule, 420 s, plus nothing for the reload).",
    ),
    interval: str = typer.Option("auto", "--interval", help="Seconds between saves, or auto (Daly's optimum)."),
    derate: float = typer.Option(
        0.8, "--low-percentile-derate", help="Bandwidth at its low percentile as a share of the mean (sensitivity row)."
    ),
    days: float = typer.Option(30.0, "--days", help="Length of each simulated run, days."),
    replicas: int = typer.Option(2000, "--replicas", help="Simulated runs."),
    seed: int = typer.Option(0, "--seed", help="Random seed of the simulation."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    chart: Path = typer.Option(None, "--chart", metavar="FILE", help="Write a PNG of ETTR against the interval."),
) -> None:
    from velyrix import catalog
    from velyrix.cli.checkpoint import parse_interval
    from velyrix.planners import goodput as planner

    if restart_s is None:
        cfg = catalog.load_toml("checkpointing.toml")["restart"]
        restart_s = float(cfg["detect_s"]) + float(cfg["reschedule_s"])
    if replicas > 1_000_000:
        raise errors.InvalidInputError(f"--replicas {replicas} is too many", hint="at most 1,000,000")
    plan = planner.plan_goodput(
        gpus=gpus,
        node_type=node_type,
        failure_rate=failure_rate,
        save_s=save_s,
        restart_s=restart_s,
        interval_s=parse_interval(interval),
        low_percentile_derate=derate,
        horizon_days=days,
        replicas=replicas,
        seed=seed,
    )
    result = plan.to_dict()
    if chart is not None:
        result["chart"] = str(write_chart(plan, chart))
    if json_out:
        common.print_json(result)
        return
    from velyrix.cli import storage_views

    con = common.console()
    storage_views.render_goodput(con, result)
    if chart is not None:
        con.print(f"Chart written to {result['chart']}")


def write_chart(plan: Any, path: Path, points: int = 7) -> Path:
    """PNG of first-order ETTR against the checkpoint interval, simulated points with their 95% intervals,
    Daly's optimum marked. Imports matplotlib (Agg backend) only here."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from velyrix.planners import goodput as planner

    mtti = plan.mttf_h * 3600.0
    lo = max(plan.save_s, plan.interval_daly_s / 8.0)
    hi = min(max(plan.interval_daly_s * 6.0, plan.interval_s * 2.0), mtti)
    xs = np.geomspace(lo, max(hi, lo * 2.0), 200)
    ys = planner.ettr_curve(plan.save_s, plan.restart_s, mtti, list(xs))
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    ax.plot(xs / 60.0, np.array(ys) * 100.0, label="first-order ETTR")
    sim_x = np.geomspace(lo, max(hi, lo * 2.0), points)
    for i, x in enumerate(sim_x):
        sim = planner.simulate_ettr(
            float(x),
            plan.save_s,
            plan.restart_s,
            mtti,
            horizon_s=plan.simulation.horizon_s,
            replicas=max(200, plan.simulation.replicas // 4),
            seed=plan.simulation.seed + i,
        )
        err = (sim.ettr_ci[1] - sim.ettr_ci[0]) * 50.0
        ax.errorbar(
            x / 60.0,
            sim.ettr_mean * 100.0,
            yerr=err,
            fmt="o",
            color="tab:orange",
            capsize=3,
            label="simulated (95% CI)" if i == 0 else None,
        )
    ax.axvline(
        plan.interval_daly_s / 60.0,
        color="tab:green",
        linestyle="--",
        label=f"Daly optimum {plan.interval_daly_s / 60.0:,.1f} min",
    )
    ax.plot([plan.interval_daly_s / 60.0], [plan.ettr_at_daly * 100.0], marker="*", markersize=14, color="tab:green")
    if not plan.interval_is_auto:
        ax.axvline(
            plan.interval_s / 60.0, color="tab:red", linestyle=":", label=f"chosen {plan.interval_s / 60.0:,.1f} min"
        )
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval (minutes)")
    ax.set_ylabel("ETTR (%)")
    ax.set_title(
        f"{plan.gpus:,} GPUs, MTTI {plan.mttf_h:,.1f} h, save {plan.save_s:,.1f} s, restart {plan.restart_s:,.0f} s"
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower center")
    fig.tight_layout()
    try:
        fig.savefig(path, format="png")
    except OSError as exc:
        raise errors.InvalidInputError(
            f"cannot write the chart to {path}: {exc.strerror}", hint="give a writable path, e.g. --chart ettr.png"
        ) from None
    finally:
        plt.close(fig)
    return path
