"""``velyrix up`` (control plane + twin), ``velyrix demo``, ``velyrix sim inject``,
``velyrix report acceptance`` and ``velyrix verify acceptance``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from velyrix.cli import common
from velyrix.cli.acceptance_report import render_report


def _group(app: typer.Typer, name: str, help_text: str) -> typer.Typer:
    """The sub-command group ``name`` of ``app`` (shared with other modules), created when missing."""
    for info in app.registered_groups:
        if info.name == name and info.typer_instance is not None:
            return info.typer_instance
    group = typer.Typer(name=name, help=help_text, no_args_is_help=True)
    app.add_typer(group, name=name)
    return group


def register(app: typer.Typer) -> None:
    app.command(name="up")(up)
    app.command(name="demo")(demo)
    _group(app, "sim", "The digital twin: a simulated region of GPU nodes.").command(name="inject")(inject)
    _group(app, "report", "Reports: acceptance, ...").command(name="acceptance")(report_acceptance)
    _group(app, "verify", "Verify signed documents.").command(name="acceptance")(verify_acceptance)
    _group(app, "node", "Fleet nodes (provider keys).").command(name="token")(node_token)


def node_token(
    hostname: str = typer.Argument(..., help="Node hostname, e.g. use1-h200-su00-n07.", show_default=False),
) -> None:
    """Issue a new token for the node's agent (earlier ones stop working) and print it once."""
    from velyrix import errors
    from velyrix.cli import client as client_mod

    client = client_mod.Client.from_login()
    found = client.get("/v1/nodes", name=hostname)["items"]
    if not found:
        raise errors.NotFoundError(kind="node", name=hostname)
    issued = client.post(f"/v1/nodes/{found[0]['id']}/credentials", {})
    typer.echo(issued["node_token"])
    common.console(stderr=True).print(
        f"token for {hostname} (shown once): run its agent with --control-plane {client.endpoint} --node-token <token>"
    )


def up(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8600, help="TCP port."),
    region: str = typer.Option("us-east-1", help="Catalog region the twin simulates."),
    nodes: list[str] = typer.Option(
        None,
        "--nodes",
        metavar="NODE_TYPE=COUNT",
        help="Twin nodes per type (repeatable; default: the region's capacity).",
    ),
    seed: int = typer.Option(0, help="Seed of the twin (same seed, same serials, same faults)."),
    speed: float = typer.Option(60.0, help="Simulated seconds per wall second."),
    no_delays: bool = typer.Option(False, "--no-delays", help="Driver requests finish at once (tests, benchmarks)."),
    spontaneous: bool = typer.Option(
        False, "--spontaneous-faults", help="Let faults happen at the catalog's failure rates (with precursors)."
    ),
    agent_interval_s: float = typer.Option(
        5.0, "--agent-interval", help="Wall seconds between polls of each twin node's agent (0: run no agents)."
    ),
    agent_step_s: float = typer.Option(
        None,
        "--agent-step",
        metavar="SIM_S",
        help="Fast-forward: the twin's clock moves only with its agents, SIM_S simulated seconds after each poll "
        "of every node (replaces --speed; e.g. 3600 runs 30 simulated days of 256 nodes in minutes).",
    ),
    until_days: float = typer.Option(
        None, "--until-days", help="With --agent-step: stop the twin's clock at this many simulated days."
    ),
    tls_cert: Path = typer.Option(None, "--tls-cert", help="Serve HTTPS with this PEM certificate (chain)."),
    tls_key: Path = typer.Option(None, "--tls-key", help="The certificate's PEM private key."),
    tls_min_version: str = typer.Option("1.3", "--tls-min-version", help="1.3 (default), or 1.2 to allow TLS 1.2."),
    start: str = typer.Option(
        None, "--start", help="UTC time the twin's clock starts at, e.g. 2026-11-01T00:00:00Z (default: now)."
    ),
    exporter_port: int = typer.Option(
        9501,  # velyrix.ops.twin_agents.EXPORTER_PORT (not imported here: the CLI starts without the API's imports)
        "--exporter-port",
        help="Serve the twin nodes' metrics on this port, one Prometheus target per node listed at /sd "
        "(http_sd_configs), on the wall clock (0: no exporter).",
    ),
    redfish_port: int = typer.Option(
        0,
        "--redfish-port",
        help="Serve the twin's BMCs over Redfish (/redfish/v1) on this port and provision the twin through "
        "them with the Redfish driver (0: the twin's own driver).",
    ),
    redfish_password_file: Path = typer.Option(
        None,
        "--redfish-password-file",
        help="With --redfish-port: the BMCs' password (user 'velyrix'), read from this file; "
        "default: a new one in $VELYRIX_HOME/twin-redfish.password (mode 0600).",
    ),
    slurm: bool = typer.Option(
        False,
        "--slurm",
        help='Deliver the scheduler of each cluster: for scheduler = "slurm" a real Slurm per cluster on '
        "loopback (slurmctld, one slurmd per node, accounting in one shared slurmdbd on MariaDB; needs Debian's "
        'slurm-wlm, slurmdbd, munge, mariadb-server), for "kubernetes" its Kueue and GPU manifests.',
    ),
    jump_port: int = typer.Option(
        0,
        "--jump-port",
        help="Run the real OpenSSH jump host on 127.0.0.1:PORT in front of the twin's allocated nodes, one "
        "sshd per node (ssh -J with `velyrix ssh certificate`; docs/access.md; 0: none).",
    ),
) -> None:
    """Run the control plane with a digital-twin region as its fleet (API, reconcilers, twin, a node agent
    per twin node that reports to the API, and the NOC's escalation sweeps on the twin's clock; long-running)."""
    import logging

    from velyrix.cli import serving
    from velyrix.controlplane.identity import tls

    tls_options = tls.uvicorn_options(tls_cert, tls_key, tls_min_version)
    _check_forward(agent_step_s, until_days, agent_interval_s)

    from velyrix import private_files, settings
    from velyrix.controlplane.reconcile.runtime import FleetRuntime
    from velyrix.ops import twin_agents
    from velyrix.ops.noc import sweeping
    from velyrix.ops.service import create_app

    epoch_s = common.parse_utc(start, "--start").timestamp() if start else None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the twin agents' requests: one line each otherwise
    app = create_app(noc_sweep_s=sweeping.interval_for(speed, settings.load().noc.sweep_s))

    home = private_files.private_dir(settings.load().paths.home, tighten=True)
    runtime = FleetRuntime.twin(
        app.state.sessionmaker,
        region,
        node_counts=common.parse_node_counts(nodes),
        seed=seed,
        delays=not no_delays,
        speed=0.0 if agent_step_s else speed,  # 0: the clock moves only when advanced
        state_file=home / f"twin-{region}-{seed}.json",
        epoch_s=epoch_s,
    )
    runtime.attach(app)
    if spontaneous and runtime.sim is not None:
        runtime.sim.enable_spontaneous()
    schedulers = None
    if slurm:
        from velyrix.ops.scheduler import twin_delivery

        schedulers = twin_delivery.install(app, runtime)
    exporter = None
    if exporter_port > 0 and runtime.sim is not None:  # before the threads start: a port in use stops here
        jobs = schedulers.job_map_root if schedulers is not None else None
        exporter = twin_agents.serve_exporter(runtime.sim, host, exporter_port, job_map_root=jobs)
    redfish = _serve_redfish(runtime, host, redfish_port, redfish_password_file, home) if redfish_port else None
    jump = _serve_jump(app, home, jump_port, redfish) if jump_port else None
    runtime.start()
    from velyrix.ops.rollouts import running as rollouts_running

    rollouts = rollouts_running.start_for(app, runtime)
    agents = None
    if agent_interval_s > 0 and runtime.sim is not None:
        local = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        agents = twin_agents.TwinAgents(
            app.state.sessionmaker,
            runtime.sim,
            f"http://{local}:{port}",
            interval_s=agent_interval_s,
            step_s=agent_step_s or None,
            until_s=until_days * 86400.0 if until_days else None,
            job_map_root=schedulers.job_map_root if schedulers is not None else None,
        )
        agents.start()
    common.console(stderr=True).print(
        f"velyrix up: {region} twin with {len(runtime.sim.nodes) if runtime.sim else 0} "
        f"nodes, API on {'https' if tls_options else 'http'}://{host}:{port}"
        + (f", one agent per node every {agent_interval_s:g} s" if agents else ", no node agents")
        + (f", node metrics listed at {exporter.sd_url}" if exporter else "")
        + (f", BMCs on {redfish.service.url}/redfish/v1 (provisioning through Redfish)" if redfish else "")
        + (f", jump host on 127.0.0.1:{jump.port} (host keys: {jump.known_hosts})" if jump else "")
    )
    try:
        serving.serve(app, host, port, **tls_options)  # as velyrix server (cli/serving.py)
    finally:
        if agents is not None:
            agents.stop()
        if exporter is not None:
            exporter.close()
        if rollouts is not None:
            rollouts.stop()
        runtime.stop()
        if schedulers is not None:
            schedulers.close()
        if redfish is not None:
            redfish.close()
        if jump is not None:
            jump.close()


def _serve_jump(app: Any, home: Path, port: int, redfish: Any) -> Any:
    """``--jump-port``: the jump host and the twin nodes' sshd (``velyrix.testing.twin_jump``); with
    ``--redfish-port`` each node's BMC target is its own view of the twin's Redfish service."""
    from velyrix.testing import twin_jump

    url = app.state.engine.url.render_as_string(hide_password=False)
    return twin_jump.TwinJumpHost(app.state.sessionmaker, url, home / "jump", port, bmc=redfish is not None).start()


def _serve_redfish(runtime: Any, host: str, port: int, password_file: Path | None, home: Path) -> Any:
    """``--redfish-port``: the twin's Redfish service, its password from ``password_file`` or a new private one."""
    import secrets

    from velyrix import errors, private_files
    from velyrix.ops import redfish_twin

    if password_file is not None:
        try:
            password = password_file.read_text().strip()
        except OSError as exc:
            raise errors.InvalidInputError(f"--redfish-password-file {password_file}: {exc.strerror}") from exc
        if not password:
            raise errors.InvalidInputError(f"--redfish-password-file {password_file} is empty")
    else:
        password = secrets.token_urlsafe(24)
        private_files.write_private(home / "twin-redfish.password", password.encode())
    return redfish_twin.serve(runtime, host=host, port=port, password=password)


def _check_forward(step_s: float | None, until_days: float | None, agent_interval_s: float) -> None:
    """``--agent-step`` / ``--until-days``: positive, and only together with agents."""
    from velyrix import errors

    if step_s is not None and step_s <= 0:
        raise errors.InvalidInputError(f"--agent-step must be > 0 simulated seconds, got {step_s:g}", hint="e.g. 3600")
    if until_days is not None and (step_s is None or until_days <= 0):
        raise errors.InvalidInputError(
            "--until-days needs --agent-step and a positive number of days",
            hint="e.g. --agent-step 3600 --until-days 30",
        )
    if step_s is not None and agent_interval_s <= 0:
        raise errors.InvalidInputError("--agent-step moves the clock with the agents: --agent-interval must be > 0")


def inject(
    node: str = typer.Argument(..., help="Twin hostname, e.g. use1-h200-su00-n07.", show_default=False),
    xid: int = typer.Option(None, "--xid", help="Raise this XID (e.g. 79: fallen off the bus)."),
    kind: str = typer.Option(
        None,
        "--kind",
        help="ecc_dbe, ecc_sbe_storm, slow_gpu, ib_down, slow_disk, "
        "remap_failure, nvlink, thermal (default: xid with --xid).",
    ),
    gpu: int = typer.Option(None, "--gpu", help="GPU index (default 0)."),
    port: int = typer.Option(None, "--port", help="IB port index for ib_down."),
    drive: int = typer.Option(None, "--drive", help="NVMe index for slow_disk."),
    factor: float = typer.Option(None, "--factor", help="Performance factor 0-1 for slow_gpu/slow_disk/thermal."),
    precursor_s: float = typer.Option(0.0, "--precursor-s", help="Simulated seconds of precursor signals first."),
) -> None:
    """Inject a fault into a node of the twin (needs a provider key with fleet:operate)."""
    from velyrix import errors
    from velyrix.cli import client as client_mod

    if kind is None and xid is None:
        raise errors.InvalidInputError("say which fault: --xid N or --kind KIND", hint="e.g. --xid 79")
    body = {
        "node": node,
        "kind": kind or "xid",
        "gpu": gpu,
        "xid": xid,
        "port": port,
        "drive": drive,
        "factor": factor,
        "precursor_s": precursor_s,
    }
    try:
        event = client_mod.Client.from_login().post("/v1/sim/faults", {k: v for k, v in body.items() if v is not None})
    except errors.RemoteError as exc:
        if exc.code != "forbidden":
            raise
        raise errors.RemoteError(
            str(exc),
            code=exc.code,
            status=exc.http_status,
            hint="faults are injected with a provider key, not a tenant's: `velyrix admin "
            "create-provider-key NAME` prints one; pass it as VELYRIX_API_KEY",
        ) from exc
    common.console().print(
        f"{event['kind']} injected at t={event['at_s']:.0f} s on {event['hostname']}: {event['fault']}"
    )


def report_acceptance(
    cluster: str = typer.Argument(..., help="Cluster name.", show_default=False),
    json_out: bool = typer.Option(False, "--json", help="Print the signed report as JSON (feed it to verify)."),
) -> None:
    """Show the signed acceptance report of a cluster: every node's tests, the cluster tests, replacements."""
    from velyrix import errors
    from velyrix.cli import client as client_mod

    client = client_mod.Client.from_login()
    live = client.find_cluster(cluster)
    if live is None:
        raise errors.NotFoundError(kind="cluster", name=cluster)
    signed = client.get(f"/v1/clusters/{live['id']}/acceptance")
    if json_out:
        common.print_json(signed)
        return
    render_report(common.console(), signed)


def verify_acceptance(
    file: Path = typer.Argument(
        ..., help="A report saved with `velyrix report acceptance NAME --json`.", show_default=False
    ),
    public_key: str = typer.Option(
        None,
        "--public-key",
        help="Check against this key (base64, from GET /v1/acceptance/keys/REGION), offline. Default: the "
        "region's key pinned at login (velyrix login), like SSH's known_hosts.",
    ),
) -> None:
    """Verify the Ed25519 signature of an acceptance report against the region's pinned key (or
    --public-key); exit 0 when valid, 1 when not (a report signed by any other key is INVALID)."""
    from velyrix.cli import region_signed
    from velyrix.controlplane.reconcile import signing

    region_signed.check_public_key(public_key)
    con = common.console()
    try:
        signed = region_signed.read(file, "save a report with: velyrix report acceptance NAME --json > FILE")
    except region_signed.DuplicateKeyError as dup:
        con.print(f"[red]INVALID[/]: {common.safe(dup)}")
        raise typer.Exit(1) from None
    if not (isinstance(signed, dict) and isinstance(signed.get("report"), dict) and "signature" in signed):
        signing.verify(signed if isinstance(signed, dict) else {})  # raises: not a signed document (exit 2)
    cluster = signed["report"].get("cluster")
    region = cluster.get("region") if isinstance(cluster, dict) else None
    key, source = region_signed.trusted(region, public_key, "report.cluster.region")
    if key is None:
        con.print(f"[red]INVALID[/]: cannot tell who signed it: {common.safe(source)}")
        raise typer.Exit(1)
    result = signing.verify(signed, key)
    if result.valid:
        rep = signed["report"]
        con.print(
            f"[green]valid[/]: {result.reason} ({result.key_id}, {common.safe(source)}); cluster "
            f"{common.safe(rep['cluster']['name'])}, {len(rep['nodes'])} nodes, passed={rep['passed']}"
        )
        return
    con.print(f"[red]INVALID[/]: {common.safe(result.reason)} ({common.safe(source)})")
    raise typer.Exit(1)


def demo(
    file: Path = typer.Option(Path("examples/acme-pretrain.tf"), "--file", help="Declaration to apply."),
    speed: float = typer.Option(240.0, help="Simulated seconds per wall second of the twin's clock."),
    faults: bool = typer.Option(
        True,
        "--faults/--no-faults",
        help="Inject a slow GPU into a node the cluster will get, to show its replacement.",
    ),
    seed: int = typer.Option(7, help="Seed of the twin."),
    slurm: bool = typer.Option(
        True, "--slurm/--no-slurm", help="Deliver a real Slurm with the cluster and run a job through it."
    ),
) -> None:
    """Plan, apply and validate the declared cluster on an embedded control plane (SQLite in a temporary
    VELYRIX_HOME) with a twin region, then print the delivered cluster and its signed acceptance report."""
    from velyrix.cli import demo_run

    demo_run.run(file, speed=speed, faults=faults, seed=seed, slurm=slurm)
