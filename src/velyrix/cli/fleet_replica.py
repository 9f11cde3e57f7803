"""``velyrix server --fleet-driver URL``: this API process also reconciles, as one replica of several.

The replica drives the twin served by ``velyrix sim serve`` (``velyrix.fleet.drivers.sim.remote.TwinClient``)
and, on PostgreSQL, reconciles only the clusters of the shards it leases (``controlplane.reconcile.leases``):
kill it and the others take its clusters within the lease period. On SQLite (one process) it runs alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def start(app: Any, url: str, token_file: Path, region: str, *, lease_s: float, shards: int) -> tuple[Any, Any]:
    """Build the fleet runtime of ``region`` on the twin at ``url``, attach it to ``app`` and start it;
    returns ``(runtime, leases or None)`` for ``stop``."""
    from velyrix import catalog, errors
    from velyrix.cli import sim_serve
    from velyrix.controlplane.evidence import firmware
    from velyrix.controlplane.reconcile import leases as leases_mod
    from velyrix.controlplane.reconcile.runtime import FleetRuntime
    from velyrix.fleet.drivers.sim.remote import TwinClient

    if not token_file.exists():
        raise errors.InvalidInputError(
            f"{token_file} does not exist", hint="pass the --token-file that `velyrix sim serve` wrote"
        )
    if lease_s <= 0 or shards < 1:
        raise errors.InvalidInputError("--lease-s must be > 0 and --lease-shards >= 1", hint="e.g. 15 and 32")
    baseline = catalog.region(region).firmware_baseline
    replica = leases_mod.replica_id()
    driver = TwinClient(url, sim_serve.read_or_create_token(token_file), replica)
    driver.list_nodes()  # the twin answers (or a clear twin_unreachable error) before anything starts
    if not firmware.manifest_path(region).exists():  # the twin's vendor images, published once
        firmware.publish(region, baseline, driver.firmware_image)
    firmware.load(region)
    sessionmaker = app.state.sessionmaker
    runtime = FleetRuntime(sessionmaker, driver, region)
    held = None
    if sessionmaker.kw["bind"].dialect.name == "postgresql":
        held = leases_mod.Leases(sessionmaker, region, replica=replica, shards=shards, lease_s=lease_s)
        runtime.reconciler.leases = held
    runtime.attach(app)
    runtime.start()
    return runtime, held


def stop(runtime: Any, held: Any) -> None:
    """Stop reconciling and give the leases back (the other replicas take the clusters at once)."""
    runtime.stop()
    if held is not None:
        held.close()
    runtime.driver.close()
