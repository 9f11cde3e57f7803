"""``velyrix scheduler``: Slurm configuration, policy as code, utilization reports, Fair Tree, Kueue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from velyrix import errors
from velyrix.agent import jobs
from velyrix.cli import common

scheduler_app = typer.Typer(
    name="scheduler",
    no_args_is_help=True,
    help="Operate the cluster's scheduler: generate Slurm configs, converge accounts/QOS/fair-share from a "
    "policy file, report GPU-hours per team and cost center, check fair-share, render Kueue queues.",
)

SLURM_CONF = typer.Option(
    None,
    "--slurm-conf",
    envvar="SLURM_CONF",
    metavar="PATH",
    help="slurm.conf the Slurm tools read (default: theirs, /etc/slurm/slurm.conf).",
)


def register(app: typer.Typer) -> None:
    app.add_typer(scheduler_app)


def _slurm(conf: Path | None) -> Any:
    from velyrix.ops.scheduler import commands

    return commands.Slurm(conf=str(conf) if conf else None)


def _cluster(file: Path, name: str | None) -> Any:
    from velyrix.declarations import loader
    from velyrix.ops.scheduler import clusters

    spec_file = loader.load(file)
    found = [c for c in spec_file.clusters if name in (None, c.name)]
    if not found:
        raise errors.UnknownNameError("cluster", name or "", [c.name for c in spec_file.clusters])
    if len(found) > 1:
        raise errors.InvalidInputError(
            f"{file} declares {len(found)} clusters",
            hint="pick one with --cluster " + " | ".join(c.name for c in found),
        )
    return clusters.from_spec(found[0])


@scheduler_app.command(
    "config",
    help="""Write Slurm's configuration for a declared cluster into DIR: \
slurm.conf, gres.conf (typed GPUs), topology.conf (from the fabric plan), cgroup.conf, slurmdbd.conf, \
prolog.sh and epilog.sh (quick health check, GPU-to-job mapping).

Example:  velyrix scheduler config examples/acme-pretrain.tf --out /etc/slurm --controller head-0""",
)
def config(
    file: Path = typer.Argument(None, help="HCL file declaring the cluster.", show_default=False),
    out: Path = typer.Option(..., "--out", help="Directory to write the files into."),
    cluster: str = typer.Option(None, "--cluster", help="Which cluster of FILE (when it declares several)."),
    delivered: str = typer.Option(
        None,
        "--delivered",
        metavar="CLUSTER",
        help="Instead of FILE: a cluster the control plane delivered (id or name), "
        "with its allocated nodes (database: VELYRIX_DATABASE_URL).",
    ),
    controller: str = typer.Option("slurmctld", "--controller", help="Short hostname of the slurmctld host."),
    health_check: str = typer.Option(
        "velyrix agent check --quick",
        "--health-check",
        help="Command the prolog and epilog run (exit 1 drains the node).",
    ),
    job_map_dir: str = typer.Option(
        jobs.JOB_MAP_DIR,
        "--job-map-dir",
        help="GPU-to-job mapping directory on each node (shell-expanded); the agent reads the default.",
    ),
) -> None:
    from velyrix.ops.scheduler import slurm_config

    if delivered:
        from velyrix.controlplane.db import engine
        from velyrix.ops.scheduler import delivered as delivered_clusters

        with engine.session() as session:
            sc = delivered_clusters.from_delivered(session, delivered)
    elif file is not None:
        sc = _cluster(file, cluster)
    else:
        raise errors.InvalidInputError(
            "give the cluster: an HCL FILE or --delivered CLUSTER",
            hint="velyrix scheduler config examples/acme-pretrain.tf --out DIR",
        )
    opts = slurm_config.SlurmOptions(
        controller_host=controller, health_check_command=health_check, job_map_dir=job_map_dir, conf_dir=str(out)
    )
    written = slurm_config.write(slurm_config.render(sc, opts), out, slurm_user=opts.slurm_user)
    con = common.console()
    con.print(f"Slurm configuration for {sc.name} ({len(sc.node_names)} nodes, {sc.gpus} GPUs) in {out}:")
    for p in written:
        con.print(f"  {p.name}")


def _show_changes(changes: list[Any], verb: str) -> None:
    con = common.console()
    if not changes:
        con.print("No changes. Slurm's accounts, users and QOS match the policy.")
        return
    colors = {"add": "green", "modify": "yellow", "delete": "red"}
    for c in changes:
        con.print(f"[{colors[c.op]}]{c.describe()}[/]", markup=True, highlight=False)
    counts = {op: sum(1 for c in changes if c.op == op) for op in ("add", "modify", "delete")}
    con.print(f"{verb}: {counts['add']} to add, {counts['modify']} to change, {counts['delete']} to delete.")


@scheduler_app.command(
    "plan",
    help="""Show what `apply` would change in Slurm's accounting (accounts, users, \
QOS, shares, GPU quotas) to match POLICY. Changes nothing.

Example:  velyrix scheduler plan policy.hcl""",
)
def plan(
    policy: Path = typer.Argument(..., help="HCL policy file.", show_default=False), slurm_conf: Path = SLURM_CONF
) -> None:
    from velyrix.ops.scheduler import converging, policies

    pol = policies.load(policy)
    slurm = _slurm(slurm_conf)
    _show_changes(converging.plan(pol, converging.read(slurm, pol.cluster)), "Plan")


@scheduler_app.command(
    "apply",
    help="""Converge Slurm's accounting to POLICY with sacctmgr: shows the diff, \
then applies it. Idempotent: a second apply changes nothing.

Example:  velyrix scheduler apply policy.hcl""",
)
def apply(
    policy: Path = typer.Argument(..., help="HCL policy file.", show_default=False), slurm_conf: Path = SLURM_CONF
) -> None:
    from velyrix.ops.scheduler import converging, policies

    pol = policies.load(policy)
    slurm = _slurm(slurm_conf)
    changes = converging.plan(pol, converging.read(slurm, pol.cluster))
    _show_changes(changes, "Applying")
    converging.apply(changes, slurm)
    if changes:
        common.console().print("Applied.")


@scheduler_app.command(
    "report",
    help="""Utilization per team and cost center for a period: GPU-hours \
allocated (sacct), busy (telemetry, with --busy), jobs, wait times, fair-share standing, top users.

Examples:

  velyrix scheduler report --from 2026-11-01 --to 2026-12-01

  velyrix scheduler report --from 2026-11-01 --to 2026-12-01 --format html --out nov.html""",
)
def report(
    t_from: str = typer.Option(..., "--from", help="Start of the period (ISO 8601, UTC)."),
    t_to: str = typer.Option(..., "--to", help="End of the period (ISO 8601, UTC), exclusive."),
    fmt: str = typer.Option("table", "--format", help="table | csv | json | html"),
    out: Path = typer.Option(None, "--out", help="Write to this file instead of the terminal."),
    busy: Path = typer.Option(None, "--busy", help="JSON {job_id: busy GPU-seconds} from telemetry."),
    busy_from: str = typer.Option(
        None,
        "--busy-from",
        metavar="URL",
        help="Prometheus base URL: busy GPU-seconds per job from DCGM_FI_DEV_GPU_UTIL.",
    ),
    busy_step: float = typer.Option(60.0, "--busy-step", help="Sampling step of --busy-from, seconds."),
    top: int = typer.Option(10, "--top", help="How many top users."),
    source: str = typer.Option(
        "json", "--source", help="json: sacct --json; parsable: sacct -P (faster over long periods)."
    ),
    slurm_conf: Path = SLURM_CONF,
) -> None:
    import json

    from velyrix.ops.scheduler import accounting, report_formats, reports

    if fmt not in report_formats.FORMATS:
        near = errors.closest(fmt, report_formats.FORMATS)
        raise errors.InvalidInputError(
            f"unknown format '{fmt}'",
            hint=(f"did you mean '{near[0]}'? " if near else "") + "valid: " + ", ".join(report_formats.FORMATS),
        )
    a, b = accounting.to_epoch(t_from), accounting.to_epoch(t_to)
    if b <= a:
        raise errors.InvalidInputError("--to must be after --from", hint=f"got {t_from} .. {t_to}")
    busy_s = None
    if busy is not None:
        try:
            busy_s = {int(k): float(v) for k, v in json.loads(busy.read_text()).items()}
        except (OSError, ValueError, AttributeError) as exc:
            raise errors.InvalidInputError(
                f"cannot read --busy {busy}: {exc}", hint='expected JSON like {"1234": 7200.0}'
            ) from None
    if busy_from:
        from velyrix.ops.scheduler import telemetry

        busy_s = telemetry.busy_gpu_seconds(busy_from, a, b, step_s=busy_step)
    slurm = _slurm(slurm_conf)
    jobs = accounting.load_jobs(slurm, a, b, source=source)
    parents = accounting.account_parents(slurm)
    _, shares = accounting.load_shares(slurm)
    data = reports.build(
        jobs, a, b, cost_center_of=accounting.cost_centers(parents), shares=shares, busy_gpu_s=busy_s, top_n=top
    )
    text = report_formats.render(data, fmt)
    if out:
        out.write_text(text)
        common.console().print(f"Report written to {out}")
    else:
        print(text, end="")


@scheduler_app.command(
    "fairshare",
    help="""Fair-share factors from our Fair Tree next to Slurm's (sshare), \
or a what-if with --policy: the policy's shares applied to today's usage.

Example:  velyrix scheduler fairshare --policy policy.hcl""",
)
def fairshare(
    policy: Path = typer.Option(None, "--policy", help="Use this policy's shares (what-if)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    slurm_conf: Path = SLURM_CONF,
) -> None:
    from rich.table import Table

    from velyrix.ops.scheduler import accounting, fairtree, policies

    rows, typed = accounting.load_shares(_slurm(slurm_conf))
    live = fairtree.from_sshare(rows)
    ours = fairtree.compute(live)
    whatif: dict[tuple[str, str], float] = {}
    if policy is not None:
        pol = policies.load(policy)
        usage = {(s.account, s.user): s.raw_usage for s in typed if s.user}
        extra = {(s.account, s.user): 1.0 for s in typed if s.user and s.account not in pol.teams}
        whatif = fairtree.compute(fairtree.from_policy(pol, usage, extra))
    result = [
        {
            "account": s.account,
            "user": s.user,
            "raw_usage": s.raw_usage,
            "slurm": s.fairshare,
            "velyrix": ours.get((s.account, s.user)),
            "what_if": whatif.get((s.account, s.user)),
        }
        for s in typed
        if s.user
    ]
    if json_out:
        common.print_json(result)
        return
    tab = Table(title="Fair-share factors (Fair Tree)")
    for c in ("account", "user", "raw usage", "slurm", "velyrix") + (("what-if",) if policy else ()):
        tab.add_column(c, justify="left" if c in ("account", "user") else "right")
    for r in result:
        cells: list[str] = [
            str(r["account"]),
            str(r["user"]),
            f"{r['raw_usage']:,.0f}",
            "-" if r["slurm"] is None else f"{r['slurm']:.6f}",
            "-" if r["velyrix"] is None else f"{r['velyrix']:.6f}",
        ]
        if policy:
            cells.append("-" if r["what_if"] is None else f"{r['what_if']:.6f}")
        tab.add_row(*cells)
    common.console().print(tab)


@scheduler_app.command(
    "kueue",
    help="""Render POLICY for Kubernetes: Kueue ResourceFlavors, ClusterQueues \
(cohort per cost center, GPU quotas, fair-sharing weights) and LocalQueues, as YAML. With one argument, \
a delivered cluster's name: the Kueue and GPU manifests delivered with it (scheduler = "kubernetes").

Examples:  velyrix scheduler kueue policy.hcl examples/acme-pretrain.tf > kueue.yaml

           velyrix scheduler kueue small-k8s > delivered.yaml""",
)
def kueue(
    policy: str = typer.Argument(
        ..., help="HCL policy file (or, alone, a delivered cluster's name).", show_default=False
    ),
    file: Path = typer.Argument(None, help="HCL file declaring the cluster.", show_default=False),
    cluster: str = typer.Option(None, "--cluster", help="Which cluster of FILE."),
    api: str = typer.Option(
        "v1beta2", "--api", metavar="v1beta2|v1beta1", help="Kueue API version (v1beta1 is deprecated)."
    ),
) -> None:
    from velyrix.ops.scheduler import kueue as kq
    from velyrix.ops.scheduler import policies

    if file is None:
        artifacts = _delivered(policy)["artifacts"]
        if not artifacts:
            raise errors.InvalidInputError(
                f"cluster '{policy}' was delivered with no Kubernetes manifests",
                hint='they come with scheduler = "kubernetes"; give POLICY and FILE to render them',
            )
        print("".join(artifacts[k] for k in sorted(artifacts)), end="")
        return
    print(kq.to_yaml(kq.render(policies.load(policy), _cluster(file, cluster), api=api)), end="")


def _delivered(name: str) -> dict[str, Any]:
    """The scheduler delivered with the cluster ``name`` (``GET /v1/clusters/{id}/scheduler``)."""
    from velyrix.cli import client as client_mod

    client = client_mod.Client.from_login()
    found = client.find_cluster(name)
    if found is None:
        raise errors.NotFoundError(kind="cluster", name=name)
    return dict(client.get(f"/v1/clusters/{found['id']}/scheduler"))


@scheduler_app.command(
    "env",
    help="""Print the environment that points Slurm's tools at the Slurm delivered with CLUSTER, as shell \
exports (SLURM_CONF, ...).

Example:  eval "$(velyrix scheduler env train)" && sinfo && srun -N 4 hostname""",
)
def env(
    cluster: str = typer.Argument(..., help="Name of a delivered cluster.", show_default=False),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    import shlex

    got = _delivered(cluster)
    if json_out:
        common.print_json(got["env"])
        return
    if got["kind"] != "slurm" or got["state"] != "ready" or not got["env"]:
        raise errors.InvalidInputError(
            f"cluster '{cluster}' has no running Slurm ({got['kind']}: {got['state']})", hint=got["message"]
        )
    for key, value in sorted(got["env"].items()):
        print(f"export {key}={shlex.quote(str(value))}")


@scheduler_app.command("drain", help="Drain a Slurm node with the reason 'velyrix:<source>: <reason>'.")
def drain(
    node: str = typer.Argument(..., show_default=False),
    reason: str = typer.Option(..., "--reason"),
    source: str = typer.Option("operator", "--source"),
    slurm_conf: Path = SLURM_CONF,
) -> None:
    from velyrix.ops.scheduler import slurm_drains

    slurm_drains.SlurmSeam(_slurm(slurm_conf)).drain(node, reason, source)
    common.console().print(f"Drained {node} (source {source}).")


@scheduler_app.command("undrain", help="Release the drain SOURCE holds on NODE (other holders' drains stay).")
def undrain(
    node: str = typer.Argument(..., show_default=False),
    source: str = typer.Option("operator", "--source"),
    slurm_conf: Path = SLURM_CONF,
) -> None:
    from velyrix.ops.scheduler import slurm_drains

    seam = slurm_drains.SlurmSeam(_slurm(slurm_conf))
    seam.undrain(node, source)
    left = seam.holders(node)
    common.console().print(
        f"Released {source}'s drain on {node}"
        + (f"; still held by {', '.join(left)}." if left else "; back in service.")
    )
