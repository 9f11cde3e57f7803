"""The twin driven over Redfish: ``velyrix up --redfish-port PORT`` serves the twin's BMCs
(``fleet.drivers.sim.redfish_service``) and swaps the runtime's driver for the Redfish driver, so that
enrollment, provisioning and reboots go through the same code path as real BMCs, with the twin's own
driver for what a BMC cannot do (networks, mounts, acceptance tests, purge).

Each twin node's BMC credentials are stored sealed (``controlplane.bmc_credentials``); the twin's BMCs hold
the password in memory only (a random one per start unless given), and the driver opens the sealed copy
for every request, as it does for real servers.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from velyrix.controlplane import bmc_credentials
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.fleet.drivers.redfish import RedfishDriver, RedfishSettings, Secret
from velyrix.fleet.drivers.sim.redfish_resources import TwinBmcs
from velyrix.fleet.drivers.sim.redfish_service import RedfishService

USERNAME = "velyrix"
IMAGE_URL = "http://images.twin.invalid/{image}.iso"
"""Where the twin's installer images are: the twin does not download them (its CD only names the image)."""
FIRMWARE_URL = "http://images.twin.invalid/firmware/{component}/{version}.bin"


@dataclass
class RedfishTwin:
    """The twin's Redfish service and the driver provisioning through it; ``close`` stops both."""

    bmcs: TwinBmcs
    service: RedfishService
    driver: RedfishDriver

    def close(self) -> None:
        self.service.close()
        self.driver.close()


def serve(
    runtime: FleetRuntime,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    password: str | None = None,
    settings: RedfishSettings | None = None,
    update_s: float = 0.0,
) -> RedfishTwin:
    """Serve the BMCs of ``runtime``'s twin on ``host:port`` (0: a free port) and make the runtime drive them
    through Redfish. ``update_s``: simulated seconds each firmware update takes. A port in use raises
    ``InvalidInputError`` before anything changed."""
    sim = runtime.sim
    if sim is None:
        raise ValueError("the runtime has no twin")
    in_band = runtime.driver
    bmcs = TwinBmcs(sim, update_s=update_s, epoch_s=getattr(runtime.clock, "epoch_s", 0.0))
    bmcs.secure_boot_off = getattr(in_band, "secure_boot_off", set())
    secret = Secret(password or secrets.token_urlsafe(24))
    service = RedfishService(bmcs, USERNAME, secret.reveal(), host, port)
    local = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    with runtime.sessionmaker() as s:
        for name, node in sim.nodes.items():
            bmc_credentials.store(
                s,
                name,
                region=runtime.region,
                address=f"http://{local}:{service.port}",
                system_id=name,
                username=USERNAME,
                password=secret,
                verify_tls=False,
                node_type=node.node_type,
            )
        s.commit()
    chosen = settings or RedfishSettings(image_url=IMAGE_URL, firmware_url=FIRMWARE_URL, poll_s=0.2)
    driver = RedfishDriver(
        list(sim.nodes), bmc_credentials.endpoints(runtime.sessionmaker), in_band=in_band, settings=chosen
    )
    runtime.driver = driver
    runtime.reconciler.driver = driver
    return RedfishTwin(bmcs, service, driver)


def settle_intake(runtime: FleetRuntime, timeout_s: float = 120.0) -> bool:
    """Run intake until no node waits on the driver (the Redfish driver's requests finish on its own
    threads, in wall time); False when some still wait after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if runtime.reconciler.intake() == 0:
            return True
        time.sleep(0.02)
    return False
