"""Two BMCs for the same Redfish driver tests: a ComputerSystem of the ``sushy-tools`` emulator (a process
on loopback, fake-driver mode) and a twin node behind the twin's Redfish service (what ``velyrix up
--redfish-port`` serves). Each gives the driver's endpoint and reads what the BMC holds without the driver."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from velyrix.fleet.drivers.redfish import BmcEndpoint, RedfishDriver, RedfishSettings, Secret
from velyrix.fleet.drivers.sim import SimRegion
from velyrix.fleet.drivers.sim.redfish_resources import TwinBmcs
from velyrix.fleet.drivers.sim.redfish_service import RedfishService
from velyrix.testing.sushy_emulator import SushyEmulator

TWIN_NODE = "use1-h200-su00-n00"
PASSWORD = "twin-bmc-secret-9f3a"


@dataclass
class Bmc:
    """One BMC under test: ``kind`` (emulator|twin), the driver's ``node`` name, ``endpoint(password)``,
    ``settings`` (image URL on a server it can fetch), ``system()`` (the ComputerSystem JSON read directly)
    and ``cd()`` (its virtual CD JSON)."""

    kind: str
    node: str
    endpoint: Callable[[str | None], BmcEndpoint]
    settings: RedfishSettings
    url: str
    system_path: str
    cd_path: str
    twin: TwinBmcs | None = None

    def get(self, path: str) -> dict[str, Any]:
        ep = self.endpoint(None)
        r = httpx.get(self.url + path, auth=(ep.username, ep.password.reveal()), timeout=10)
        r.raise_for_status()
        body: dict[str, Any] = r.json()
        return body

    def system(self) -> dict[str, Any]:
        return self.get(self.system_path)

    def cd(self) -> dict[str, Any]:
        return self.get(self.cd_path)

    def driver(self, password: str | None = None, **settings: Any) -> RedfishDriver:
        s = RedfishSettings(**{**self.settings.__dict__, **settings})
        return RedfishDriver([self.node], lambda n: self.endpoint(password), settings=s, sleep=lambda _s: None)


def _settings(image_base: str) -> RedfishSettings:
    return RedfishSettings(
        attempts=2,
        backoff_s=0.0,
        poll_s=0.2,
        power_timeout_s=60.0,
        firmware_timeout_s=2.0,
        request_timeout_s=5.0,
        image_url=image_base + "/{image}.iso",
        firmware_url="http://127.0.0.1:9/firmware/{component}/{version}.bin",
    )


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SushyEmulator]:
    with SushyEmulator.start(tmp_path_factory.mktemp("sushy")) as emu:
        (emu.image_dir / "ubuntu-22.04-cuda12.iso").write_bytes(b"velyrix test installer image\n" * 64)
        yield emu


def _emulator_bmc(emu: SushyEmulator) -> Bmc:
    def endpoint(password: str | None) -> BmcEndpoint:
        return emu.endpoint(password)

    auth = ("velyrix", emu.password)
    manager = httpx.get(f"{emu.url}/redfish/v1/Managers", auth=auth).json()["Members"][0]["@odata.id"]
    media = httpx.get(emu.url + manager, auth=auth).json()["VirtualMedia"]["@odata.id"]
    return Bmc(
        kind="emulator",
        node="emu-0",
        endpoint=endpoint,
        settings=_settings(emu.image_base),
        url=emu.url,
        system_path=f"/redfish/v1/Systems/{emu.system_id}",
        cd_path=media + "/Cd",
    )


def _twin_bmc() -> Iterator[Bmc]:
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 2}, seed=7)
    twin = TwinBmcs(region)
    service = RedfishService(twin, "admin", PASSWORD)

    def endpoint(password: str | None) -> BmcEndpoint:
        return BmcEndpoint(
            address=service.url,
            system_id=TWIN_NODE,
            username="admin",
            password=Secret(PASSWORD if password is None else password),
            verify_tls=False,
            node_type="hgx-h200-8g",
        )

    try:
        yield Bmc(
            kind="twin",
            node=TWIN_NODE,
            endpoint=endpoint,
            settings=_settings("http://images.twin.invalid"),
            url=service.url,
            system_path=f"/redfish/v1/Systems/{TWIN_NODE}",
            cd_path=f"/redfish/v1/Managers/{TWIN_NODE}/VirtualMedia/Cd",
            twin=twin,
        )
    finally:
        service.close()


@pytest.fixture(params=["emulator", "twin"])
def bmc(request: pytest.FixtureRequest) -> Iterator[Bmc]:
    if request.param == "emulator":
        emu = request.getfixturevalue("emulator")
        b = _emulator_bmc(emu)
        # each test starts from a powered-off system without a boot override or media
        drv = b.driver()
        drv.power(b.node, False, request_id="reset/off")
        assert drv.wait("reset/off").status == "succeeded"
        httpx.patch(
            emu.url + b.system_path,
            json={"Boot": {"BootSourceOverrideEnabled": "Disabled"}},
            auth=("velyrix", emu.password),
        )
        httpx.post(emu.url + b.cd_path + "/Actions/VirtualMedia.EjectMedia", json={}, auth=("velyrix", emu.password))
        drv.close()
        yield b
    else:
        yield from _twin_bmc()
