"""Firmware through UpdateService.SimpleUpdate on the twin's BMCs (sushy-tools' fake systems have no
FirmwareInventory: its SimpleUpdate needs a libvirt domain): a flash is a Task polled to its end; one that
never completes fails the request with the task named, before the node's boot settings were touched."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from tests.fleet.redfish.conftest import Bmc, _twin_bmc
from velyrix.fleet.drivers import base
from velyrix.fleet.drivers.sim.redfish_resources import firmware_image

IMAGE = "ubuntu-22.04-cuda12"


@pytest.fixture
def twin() -> Iterator[Bmc]:
    yield from _twin_bmc()


def test_provision_flashes_only_what_differs_and_reports_the_running_images(twin: Bmc) -> None:
    assert twin.twin is not None
    node = twin.twin.node(twin.node)
    wanted = {**node.firmware, "bios": "9.9.9"}
    drv = twin.driver()
    op = drv.wait(drv.provision(twin.node, image=IMAGE, firmware=wanted, request_id="p").request_id)
    assert op.status == base.SUCCEEDED, op.error
    assert op.result["flashed"] == ["bios"] and node.firmware["bios"] == "9.9.9"
    assert op.result["firmware"] == wanted
    assert op.result["firmware_sha256"]["bios"] == hashlib.sha256(firmware_image("bios", "9.9.9")).hexdigest()
    assert op.result["secure_boot"] == {"enabled": True, "mode": "DeployedMode", "current_boot": "Enabled"}
    (task,) = twin.twin.tasks.values()
    assert task.state == "Completed" and task.component == "bios"


def test_a_firmware_update_that_never_completes_fails_and_leaves_the_boot_alone(twin: Bmc) -> None:
    assert twin.twin is not None
    node = twin.twin.node(twin.node)
    old = dict(node.firmware)
    twin.twin.hang_updates(twin.node)
    drv = twin.driver(firmware_timeout_s=0.5)
    op = drv.wait(drv.provision(twin.node, image=IMAGE, firmware={**old, "bios": "9.9.9"}, request_id="h").request_id)
    assert op.status == base.FAILED and op.retryable is False
    assert "updating bios to 9.9.9" in (op.error or "") and "/redfish/v1/TaskService/Tasks/1" in (op.error or "")
    assert "still Running after 0.5 s" in (op.error or "")
    system = twin.system()
    assert system["Boot"]["BootSourceOverrideEnabled"] == "Disabled" and twin.cd()["Inserted"] is False
    assert node.image is None and node.firmware == old and not node.tenant_data
