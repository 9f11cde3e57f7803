"""``velyrix up --redfish-port``: the twin's BMCs on a real port of a running control plane. The Redfish
driver provisions a twin node through it, and DMTF's redfish-service-validator walks the whole service.

The validator needs DMTF's CSDL schemas (DSP8010). No installable package ships them (neither the
validator's nor sushy's wheels, nor a Debian package) and the machines here reach no site beyond the
package registries, so it runs with ``--skipschema`` on an empty schema directory: it reads every resource,
checks what it can without schemas, and warns once per resource that the schema is missing. The test holds
it to no failure and to no warning other than that one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from velyrix.fleet.drivers import base
from velyrix.fleet.drivers.redfish import BmcEndpoint, RedfishDriver, RedfishSettings, Secret
from velyrix.ops import redfish_twin
from velyrix.testing.sushy_emulator import free_port

NODE = "use1-h200-su00-n01"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    home = tmp_path_factory.mktemp("up-redfish")
    api, rf = free_port(), free_port()
    env = {**os.environ, "VELYRIX_HOME": str(home)}
    log = (home / "up.log").open("wb")
    proc = subprocess.Popen(
        [
            str(BIN / "velyrix"),
            "up",
            "--port",
            str(api),
            "--redfish-port",
            str(rf),
            "--no-delays",
            "--agent-interval",
            "0",
            "--exporter-port",
            "0",
            "--nodes",
            "hgx-h200-8g=2",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{rf}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (home / "up.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "velyrix up did not serve Redfish"
            try:
                if httpx.get(url + "/redfish/v1", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        password = (home / "twin-redfish.password").read_text()
        assert oct((home / "twin-redfish.password").stat().st_mode & 0o777) == "0o600"
        yield url, password, home
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def test_the_redfish_driver_provisions_a_node_through_velyrix_up(up: tuple[str, str, Path]) -> None:
    url, password, _home = up
    ep = BmcEndpoint(url, NODE, redfish_twin.USERNAME, Secret(password), verify_tls=False, node_type="hgx-h200-8g")
    settings = RedfishSettings(poll_s=0.1, image_url=redfish_twin.IMAGE_URL, firmware_url=redfish_twin.FIRMWARE_URL)
    drv = RedfishDriver([NODE], lambda n: ep, settings=settings)
    try:
        inspected = drv.wait(drv.inspect(NODE, request_id="i").request_id, 60)
        assert inspected.status == base.SUCCEEDED, inspected.error
        op = drv.wait(drv.provision(NODE, image="rocky-9-cuda12", firmware={}, request_id="p").request_id, 60)
        assert op.status == base.SUCCEEDED, op.error
    finally:
        drv.close()
    auth = (redfish_twin.USERNAME, password)
    system = httpx.get(f"{url}/redfish/v1/Systems/{NODE}", auth=auth).json()
    cd = httpx.get(f"{url}/redfish/v1/Managers/{NODE}/VirtualMedia/Cd", auth=auth).json()
    assert system["SerialNumber"] == base.parse_hardware(inspected).serial and system["PowerState"] == "On"
    assert cd["Image"] == "http://images.twin.invalid/rocky-9-cuda12.iso"
    assert system["Boot"]["BootSourceOverrideEnabled"] == "Disabled"  # the one-time boot was spent
    assert httpx.get(f"{url}/redfish/v1/Systems/{NODE}", auth=(redfish_twin.USERNAME, "wrong")).status_code == 401


def test_dmtf_redfish_service_validator_finds_no_error(up: tuple[str, str, Path], tmp_path: Path) -> None:
    url, password, _home = up
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    out = subprocess.run(
        [
            str(BIN / "rf_service_validator"),
            "-r",
            url,
            "-u",
            redfish_twin.USERNAME,
            f"--password={password}",  # one argument: a generated password may begin with "-"
            "--authtype",
            "Basic",
            "--logdir",
            str(tmp_path / "logs"),
            "--schema_directory",
            str(schemas),
            "--skipschema",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    counts = [tuple(map(int, m)) for m in re.findall(r"Pass: (\d+), Warn: (\d+), Fail: (\d+)", out.stdout)]
    assert len(counts) >= 30  # root, systems, secure boot, logs, managers, media, firmware, tasks, sessions
    assert sum(c[2] for c in counts) == 0
    (debug,) = (tmp_path / "logs").glob("*/RedfishServiceValidatorDebug*.log")
    warnings = [line for line in debug.read_text().splitlines() if " - WARNING - " in line]
    assert warnings and all("Unable to locate the schema definition" in w for w in warnings), warnings[:5]
    assert password not in out.stdout
