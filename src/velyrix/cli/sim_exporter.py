"""``velyrix sim exporter``: one /metrics endpoint for every node of a simulated region.

Attaches to the ``sim`` command group when another module created it (``velyrix sim inject``...),
otherwise creates the group.
"""

from __future__ import annotations

from pathlib import Path

import typer

from velyrix.cli import common

EXPORTER_HELP = """Serve the metrics of every node of a simulated region on one /metrics endpoint, so that \
Prometheus, the shipped rules and the dashboards can be exercised at fleet scale.

Examples:

  velyrix sim exporter --region us-east-1 --nodes hgx-h200-8g=1000 --port 9500

  velyrix sim exporter --region eu-west-1 --speed 60 --load 70 --job-map-root /tmp/jobs

  velyrix sim exporter --nodes hgx-h200-8g=10000 --per-node   (Prometheus http_sd_configs: url /sd)
"""


def sim_group(app: typer.Typer) -> typer.Typer:
    """The ``sim`` Typer group of ``app``, created when no module has added it yet."""
    for info in app.registered_groups:
        if info.name == "sim" and info.typer_instance is not None:
            return info.typer_instance
    group = typer.Typer(name="sim", help="The digital twin: a simulated region of GPU nodes.", no_args_is_help=True)
    app.add_typer(group, name="sim")
    return group


def register(app: typer.Typer) -> None:
    sim_group(app).command(name="exporter", help=EXPORTER_HELP)(exporter)


def exporter(
    region: str = typer.Option("us-east-1", "--region", help="Catalog region to simulate."),
    nodes: list[str] = typer.Option(
        None, "--nodes", metavar="NODE_TYPE=COUNT", help="Nodes per type (repeatable; default: the region's capacity)."
    ),
    listen: str = typer.Option("127.0.0.1", "--listen", help="Address to serve /metrics on."),
    port: int = typer.Option(9500, "--port", help="Port (0 picks a free one)."),
    speed: float = typer.Option(1.0, "--speed", help="Simulated seconds per wall second."),
    load_pct: float = typer.Option(0.0, "--load", help="GPU load of every node (%)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the twin (serials, noise, faults)."),
    job_map_root: Path | None = typer.Option(
        None, "--job-map-root", help="Per-node job mappings in ROOT/<hostname>/<gpu index>."
    ),
    faults: bool = typer.Option(False, "--faults", help="Inject faults at the catalog's failure rates."),
    min_interval_s: float = typer.Option(
        1.0, "--min-interval", help="Scrapes closer than this (s) reuse the last collection."
    ),
    per_node: bool = typer.Option(
        False,
        "--per-node",
        help="One target per node, as real agents: nodes listed at /sd (Prometheus HTTP service discovery), "
        "each served at /nodes/<hostname>/metrics.",
    ),
) -> None:
    from velyrix.agent import fleet_exporter, service
    from velyrix.fleet.drivers.sim import SimClock, SimRegion

    counts = common.parse_node_counts(nodes, example="hgx-h200-8g=1000")
    twin = SimRegion.build(region, counts, seed=seed, clock=SimClock(speed=speed))
    for node in twin.nodes.values():
        node.load_pct = load_pct
    if faults:
        twin.enable_spontaneous(True)
    if per_node:
        from velyrix.agent import fleet_targets

        fleet_server = fleet_targets.FleetServer(
            fleet_targets.FleetTargets(twin, job_map_root=job_map_root, advance_every_s=min_interval_s), listen, port
        )
        server: service.MetricsServer | fleet_targets.FleetServer = fleet_server
        where = f"per-node targets listed at {fleet_server.sd_url}"
    else:
        server = service.serve(
            fleet_exporter.fleet_source(twin, job_map_root=job_map_root, min_interval_s=min_interval_s), listen, port
        )
        where = server.url
    typer.echo(f"velyrix sim exporter: {len(twin.nodes)} nodes of {region}, {where}", err=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.close()
