"""``velyrix sim workload`` and ``velyrix report goodput``: a training job on the twin, measured beside its plan.

Attaches to the ``sim`` and ``report`` command groups (``velyrix.cli.sim_exporter.sim_group``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from velyrix import errors
from velyrix.cli import common
from velyrix.cli.sim_exporter import sim_group

WORKLOAD_HELP = """Run the cluster's `workload` block as a simulated training job on the digital twin: steps at \
the pace of its slowest GPU and rail, checkpoint saves and data reads through the twin's performance tier \
(shared with other tenants), failures from the twin's fault model at the catalog's rates, the health loop's \
drains and replacements through the cluster's scheduler, restarts from the last complete checkpoint. \
Writes the timeline (run.json), a chart (goodput.svg) and Prometheus metrics (metrics.prom), and compares \
the measured ETTR and stall share with the plan.

CLUSTER is a cluster the control plane delivered (`velyrix up` + `velyrix apply`; database: \
VELYRIX_DATABASE_URL); --declared runs a declared cluster on a fresh twin of its nodes instead.

Examples:

  velyrix sim workload acme-pretrain --from examples/acme-405b.tf --seed 3

  velyrix sim workload acme-pretrain --from examples/acme-405b.tf --declared --parallel-fs-tb 80 --what-if-fix

  velyrix sim workload acme-pretrain --from examples/acme-405b.tf --declared --what-if mode=async \
    --what-if interval=2700

  velyrix sim workload acme-pretrain --from examples/acme-405b.tf --declared --inject 12:xid=79:5
"""


def register(app: typer.Typer) -> None:
    sim_group(app).command(name="workload", help=WORKLOAD_HELP)(workload)
    report = next((i.typer_instance for i in app.registered_groups if i.name == "report"), None)
    if report is None:
        report = typer.Typer(name="report", help="Reports: acceptance, ...", no_args_is_help=True)
        app.add_typer(report, name="report")
    report.command(name="goodput")(report_goodput)


def _runs_dir() -> Path:
    from velyrix import settings

    return settings.load().paths.home / "workloads"


def workload(
    cluster: str = typer.Argument(
        ..., help="Cluster name (delivered, or declared in FILE with --declared).", show_default=False
    ),
    file: Path = typer.Option(
        ..., "--from", help="HCL file whose cluster declares the workload block.", show_default=False
    ),
    declared: bool = typer.Option(False, "--declared", help="Run the declared cluster on a fresh twin of its nodes."),
    seed: int = typer.Option(0, "--seed", help="Seed of the twin (faults, neighbours' traffic)."),
    days: float = typer.Option(30.0, "--days", help="Simulated days (the plan's runs are 30 days)."),
    health: str = typer.Option("proactive", "--health", help="Health policy: proactive or reactive."),
    interval: float = typer.Option(None, "--interval", help="Run with this checkpoint interval (s) instead."),
    mode: str = typer.Option(None, "--mode", help="Run with sync or async saves instead."),
    parallel_fs_tb: float = typer.Option(None, "--parallel-fs-tb", help="Run with this performance tier size (TB)."),
    what_if: list[str] = typer.Option(
        None,
        "--what-if",
        metavar="KEY=VALUE",
        help="Also run the same seed changed: interval=S, mode=M, parallel_fs_tb=TB.",
    ),
    what_if_fix: bool = typer.Option(
        False, "--what-if-fix", help="Also run the same seed with the plan's cheapest change."
    ),
    inject: list[str] = typer.Option(
        None,
        "--inject",
        metavar="HOURS:FAULT[:NODE]",
        help="Inject a fault: xid=79, ecc_dbe, ib_down... on job node NODE.",
    ),
    out: Path = typer.Option(None, "--out", help="Directory for run.json, goodput.svg, metrics.prom."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    from velyrix.ops.workload import export, runner, study
    from velyrix.ops.workload.job import Overrides

    spec, sc, where = _resolve(cluster, file, declared)
    config = runner.RunConfig(
        seed=seed, days=days, policy=health, injections=tuple(_injection(v) for v in inject or [])
    )
    base = Overrides(interval_s=interval, mode=mode, parallel_fs_tb=parallel_fs_tb)
    result = study.simulate(spec, sc, config, base)
    result["placed_on"] = where
    target = out or _runs_dir() / spec.name
    result["files"] = export.write_all(result, target)
    variant = None
    if what_if or what_if_fix:
        change = study.cheapest_change(result) if what_if_fix else _overrides(what_if or [], base)
        if change is None:
            raise errors.InvalidInputError(
                "the plan recommends no change for this configuration", hint="give --what-if KEY=VALUE"
            )
        variant = study.simulate(spec, sc, config, change)
        variant["files"] = export.write_all(variant, target / "what-if")
        result["what_if"] = {**study.what_if(result, variant), "files": variant["files"]}
        export.write_json(result, target / "run.json")
    if json_out:
        common.print_json(export.to_json(result))
        return
    from velyrix.cli import workload_views

    workload_views.render_run(common.console(), export.to_json(result))


def _resolve(cluster: str, file: Path, declared: bool) -> tuple[Any, Any, str]:
    from velyrix.declarations import loader
    from velyrix.ops.scheduler import clusters

    specs = loader.load(file).clusters
    found = [c for c in specs if cluster in (c.name, c.address.split(".")[-1])] or (specs if len(specs) == 1 else [])
    if not found:
        raise errors.UnknownNameError("cluster", cluster, [c.name for c in specs])
    spec = found[0]
    if declared:
        return (
            spec,
            clusters.from_spec(spec),
            f"declared cluster {spec.name}: a fresh twin of its {spec.node_count} nodes",
        )
    import sqlalchemy as sa

    from velyrix.controlplane.db import engine
    from velyrix.ops.scheduler import delivered

    try:
        with engine.session() as session:
            sc = delivered.from_delivered(session, cluster)
    except sa.exc.OperationalError:
        raise errors.InvalidInputError(
            "no control plane database to find the delivered cluster in",
            hint="run `velyrix up` (or set VELYRIX_DATABASE_URL), or pass --declared to run the declaration",
        ) from None
    # the job is placed through the twin's pool of the cluster's nodes and the region's spares
    # (ops/workload/placement.py); a delivered Slurm takes the same seam (JobScheduler)
    return (
        spec,
        sc,
        f"delivered cluster {sc.name}: its {len(sc.node_names)} allocated nodes ({spec.scheduler} seam: twin pool)",
    )


def _injection(value: str) -> Any:
    from velyrix.fleet.drivers.sim.faults import Fault
    from velyrix.ops.workload.runner import Injection

    parts = value.split(":")
    try:
        hours, fault = float(parts[0]), parts[1]
        node = int(parts[2]) if len(parts) > 2 else 0
    except (IndexError, ValueError):
        raise errors.InvalidInputError(
            f"--inject {value!r}: expected HOURS:FAULT[:NODE]", hint="e.g. 12:xid=79:5"
        ) from None
    kind, _, xid = fault.partition("=")
    if kind == "xid" and not xid.isdigit():
        raise errors.InvalidInputError(f"--inject {value!r}: an XID needs its number", hint="e.g. 12:xid=79")
    return Injection(at_s=hours * 3600.0, fault=Fault(kind=kind, xid=int(xid) if xid else None), node=node)


def _overrides(pairs: list[str], base: Any) -> Any:
    from velyrix.ops.workload.job import Overrides

    values: dict[str, Any] = {"interval_s": base.interval_s, "mode": base.mode, "parallel_fs_tb": base.parallel_fs_tb}
    keys = {
        "interval": "interval_s",
        "checkpoint_interval_s": "interval_s",
        "mode": "mode",
        "checkpoint_mode": "mode",
        "parallel_fs_tb": "parallel_fs_tb",
    }
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or key not in keys:
            raise errors.UnknownNameError("what-if key", key, sorted(keys))
        field = keys[key]
        try:
            values[field] = raw if field == "mode" else float(raw)
        except ValueError:
            raise errors.InvalidInputError(f"--what-if {pair}: {key} takes a number", hint=f"e.g. {key}=2700") from None
    return Overrides(**values)


def report_goodput(
    cluster: str = typer.Argument(..., help="Cluster name of a `velyrix sim workload` run.", show_default=False),
    run_file: Path = typer.Option(None, "--run", help="A run.json (default: the cluster's last run)."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """The last `velyrix sim workload` run of CLUSTER beside the plan's prediction: measured ETTR and stall
    share, the difference by cause (which failures, which stalls) and the what-if run, if any."""
    path = run_file or _runs_dir() / cluster / "run.json"
    try:
        body = json.loads(path.read_text())
    except FileNotFoundError:
        raise errors.InvalidInputError(
            f"no workload run of '{cluster}' ({path} does not exist)",
            hint=f"run `velyrix sim workload {cluster} --from FILE` first",
        ) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise errors.InvalidInputError(f"cannot read {path}: {exc}") from None
    if json_out:
        common.print_json(
            {k: body.get(k) for k in ("cluster", "training_job", "config", "measured", "comparison", "what_if")}
        )
        return
    from velyrix.cli import workload_views

    workload_views.render_report(common.console(), body)
