"""``velyrix up`` (control plane + twin), ``velyrix demo``, ``velyrix sim inject``,
``velyrix report acceptance`` and ``velyrix verify acceptance``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from velyrix.cli import common


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
) -> None:
    """Run the control plane with a digital-twin region as its fleet (API, reconcilers, twin; long-running)."""
    import logging

    import uvicorn

    from velyrix.controlplane.reconcile.runtime import FleetRuntime
    from velyrix.ops.service import create_app

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    app = create_app()
    from velyrix import private_files, settings

    home = private_files.private_dir(settings.load().paths.home, tighten=True)
    runtime = FleetRuntime.twin(
        app.state.sessionmaker,
        region,
        node_counts=common.parse_node_counts(nodes),
        seed=seed,
        delays=not no_delays,
        speed=speed,
        state_file=home / f"twin-{region}-{seed}.json",
    )
    runtime.attach(app)
    if spontaneous and runtime.sim is not None:
        runtime.sim.enable_spontaneous()
    runtime.start()
    common.console(stderr=True).print(
        f"velyrix up: {region} twin with {len(runtime.sim.nodes) if runtime.sim else 0} "
        f"nodes, API on http://{host}:{port}"
    )
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        runtime.stop()


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
            common.safe(node["serial"]),
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
                common.safe(r["reason"].split(";")[0][:100]),
                r.get("sanitize_certificate", "after delivery"),
            )
        con.print(rt)
    sig = signed["signature"]
    con.print(f"Signed {sig['algorithm']} by {sig['key_id']} - check with: velyrix verify acceptance FILE")


def verify_acceptance(
    file: Path = typer.Argument(
        ..., help="A report saved with `velyrix report acceptance NAME --json`.", show_default=False
    ),
    public_key: str = typer.Option(
        None, "--public-key", help="Pin the region's key (base64, from GET /v1/acceptance/keys/REGION)."
    ),
) -> None:
    """Verify the Ed25519 signature of an acceptance report; exit 0 when valid, 1 when not."""
    from velyrix import errors
    from velyrix.controlplane.reconcile import signing

    _check_public_key(public_key)
    try:
        signed = json.loads(file.read_text(), object_pairs_hook=_pairs)
    except _DuplicateKey as dup:  # two values under one key: which one was signed is ambiguous
        common.console().print(f"[red]INVALID[/]: {common.safe(dup)}")
        raise typer.Exit(1) from None
    except (OSError, ValueError) as exc:
        raise errors.InvalidInputError(
            f"cannot read {file}: {exc}", hint="save a report with: velyrix report acceptance NAME --json > FILE"
        ) from None
    result = signing.verify(signed, public_key)
    con = common.console()
    if result.valid:
        rep = signed["report"]
        con.print(
            f"[green]valid[/]: {result.reason} ({result.key_id}); cluster {rep['cluster']['name']}, "
            f"{len(rep['nodes'])} nodes, passed={rep['passed']}"
            + ("" if public_key else " [yellow](key not pinned: use --public-key to check who signed)[/]")
        )
        return
    con.print(f"[red]INVALID[/]: {common.safe(result.reason)}")
    raise typer.Exit(1)


class _DuplicateKey(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"the document holds the key {json.dumps(key)} twice in one object")
        out[key] = value
    return out


def _check_public_key(public_key: str | None) -> None:
    """``--public-key``: base64 of a raw 32-byte Ed25519 key, else a clear input error (exit 2)."""
    import base64
    import binascii

    from velyrix import errors

    if public_key is None:
        return
    try:
        raw = base64.b64decode(public_key, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise errors.InvalidInputError(
            f"--public-key {public_key!r} is not a base64 Ed25519 public key (32 bytes)",
            hint="copy public_key from GET /v1/acceptance/keys/REGION",
        )


def demo(
    file: Path = typer.Option(Path("examples/acme-pretrain.tf"), "--file", help="Declaration to apply."),
    speed: float = typer.Option(240.0, help="Simulated seconds per wall second of the twin's clock."),
    faults: bool = typer.Option(
        True,
        "--faults/--no-faults",
        help="Inject a slow GPU into a node the cluster will get, to show its replacement.",
    ),
    seed: int = typer.Option(7, help="Seed of the twin."),
) -> None:
    """Plan, apply and validate the declared cluster on an embedded control plane (SQLite in a temporary
    VELYRIX_HOME) with a twin region, then print the delivered cluster and its signed acceptance report."""
    from velyrix.cli import demo_run

    demo_run.run(file, speed=speed, faults=faults, seed=seed)
