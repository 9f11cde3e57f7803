"""``velyrix sim serve``: a twin region served by one process, for several ``velyrix server`` replicas.

The twin stands for a data center: one thing that every control-plane replica drives. ``velyrix up`` keeps its
twin inside its own process (one replica); ``velyrix sim serve`` serves one over HTTP
(``velyrix.fleet.drivers.sim.remote``) and ``velyrix server --fleet-driver URL --fleet-token-file F`` replicas on
one PostgreSQL reconcile against it, each cluster under a lease (docs/production.md).
"""

from __future__ import annotations

import secrets
import threading
from pathlib import Path

import typer

from velyrix.cli import common
from velyrix.cli.sim_exporter import sim_group


def register(app: typer.Typer) -> None:
    sim_group(app).command(name="serve")(serve)


def read_or_create_token(path: Path) -> str:
    """The token in ``path``, or a new random one written there (owner-only) when the file is missing."""
    from velyrix import errors, private_files

    if path.exists():
        token = path.read_text().strip()
        if len(token) < 16:
            raise errors.InvalidInputError(f"{path}: a token of at least 16 characters expected", hint="delete it")
        return token
    token = secrets.token_urlsafe(32)
    private_files.write_private(path, token.encode())
    return token


def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on (the driver API has no TLS: keep it local)."),
    port: int = typer.Option(8700, help="TCP port (0 picks a free one)."),
    region: str = typer.Option("us-east-1", help="Catalog region the twin simulates."),
    nodes: list[str] = typer.Option(
        None, "--nodes", metavar="NODE_TYPE=COUNT", help="Twin nodes per type (repeatable; default: the region's)."
    ),
    seed: int = typer.Option(0, help="Seed of the twin."),
    speed: float = typer.Option(60.0, help="Simulated seconds per wall second."),
    no_delays: bool = typer.Option(False, "--no-delays", help="Driver requests finish at once."),
    token_file: Path = typer.Option(
        ..., "--token-file", help="Bearer token of the driver API: read, or created (0600) when missing."
    ),
) -> None:
    """Serve a twin region's driver over HTTP (POST /v1/driver/<method>, GET /v1/driver/ledger) until stopped."""
    from velyrix import catalog
    from velyrix.fleet.drivers.sim import SimClock, SimDelays, SimDriver, SimRegion
    from velyrix.fleet.drivers.sim.remote import TwinService

    catalog.region(region)
    token = read_or_create_token(token_file)
    sim = SimRegion.build(
        region, common.parse_node_counts(nodes), seed=seed, clock=SimClock(speed=None if no_delays else speed)
    )
    driver = SimDriver(sim, SimDelays.off() if no_delays else SimDelays())
    service = TwinService(driver, token, host, port)
    common.console(stderr=True).print(
        f"velyrix sim serve: {region} twin with {len(sim.nodes)} nodes, driver API on {service.url} "
        f"(token in {token_file})",
        highlight=False,
    )
    stop = threading.Event()
    try:
        while not stop.wait(1.0):
            sim.advance(0.0)  # counters and faults follow the clock even when nobody calls
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
