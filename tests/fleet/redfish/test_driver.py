"""The Redfish driver against two BMCs with the same tests: the sushy-tools emulator and a twin node behind
the twin's Redfish service. What is checked is read back from the BMC itself, not from the driver."""

from __future__ import annotations

import logging
import socket

import pytest

from tests.fleet.redfish.conftest import Bmc
from velyrix.fleet.drivers import base
from velyrix.fleet.drivers.sim import Fault

IMAGE = "ubuntu-22.04-cuda12"


def test_inspect_reads_the_system_and_its_secure_boot(bmc: Bmc) -> None:
    drv = bmc.driver()
    op = drv.wait(drv.inspect(bmc.node, request_id="i").request_id)
    assert op.status == base.SUCCEEDED, op.error
    system = bmc.system()
    hw = base.parse_hardware(op)
    assert hw.hostname == bmc.node and hw.serial == system.get("SerialNumber", "")
    assert op.result["system"]["power_state"] == system["PowerState"]
    assert op.result["secure_boot"]["mode"] == "DeployedMode"
    assert hw.bmc.firmware  # the Manager's FirmwareVersion
    if bmc.kind == "twin":  # the twin's BMC lists its firmware; the emulator's fake systems have none
        assert bmc.twin is not None
        assert hw.firmware == bmc.twin.node(bmc.node).firmware and hw.serial == bmc.twin.node(bmc.node).serial


def test_power_is_idempotent_by_request_id(bmc: Bmc) -> None:
    drv = bmc.driver()
    on = drv.wait(drv.power(bmc.node, True, request_id="on").request_id)
    assert on.status == base.SUCCEEDED and bmc.system()["PowerState"] == "On"
    again = drv.power(bmc.node, True, request_id="on")
    assert again is on and drv.calls == 1
    off = drv.wait(drv.power(bmc.node, False, request_id="off").request_id)
    assert off.status == base.SUCCEEDED and bmc.system()["PowerState"] == "Off"


def test_provision_boots_the_image_once_from_virtual_media(bmc: Bmc) -> None:
    drv = bmc.driver()
    op = drv.wait(drv.provision(bmc.node, image=IMAGE, firmware={}, request_id="p").request_id)
    assert op.status == base.SUCCEEDED, op.error
    url = bmc.settings.image_url.format(image=IMAGE)
    assert op.result["boot"] == {"target": "Cd", "image_url": url}
    cd = bmc.cd()
    assert cd["Inserted"] is True and cd["Image"].endswith(f"{IMAGE}.iso")
    assert bmc.system()["PowerState"] == "On"
    if bmc.twin is not None:  # the twin's installer ran: the node holds the image, the one-time boot is spent
        assert bmc.twin.node(bmc.node).image == IMAGE
        assert bmc.system()["Boot"]["BootSourceOverrideEnabled"] == "Disabled"


def test_pxe_boot_sets_a_one_time_override(bmc: Bmc) -> None:
    drv = bmc.driver(boot="pxe")
    op = drv.wait(drv.provision(bmc.node, image=IMAGE, firmware={}, request_id="pxe").request_id)
    assert op.status == base.SUCCEEDED, op.error
    assert op.result["boot"] == {"target": "Pxe", "image_url": None}
    assert bmc.system()["PowerState"] == "On"
    if bmc.kind == "emulator":  # the fake system keeps the override; the twin spends it on the boot
        assert bmc.system()["Boot"]["BootSourceOverrideTarget"] == "Pxe"


def test_a_wrong_password_fails_at_once_and_changes_nothing(bmc: Bmc, caplog: pytest.LogCaptureFixture) -> None:
    before = bmc.system()
    wrong = "not-the-password-31337"
    drv = bmc.driver(password=wrong)
    with caplog.at_level(logging.DEBUG):
        op = drv.wait(drv.provision(bmc.node, image=IMAGE, firmware={}, request_id="bad").request_id)
    assert op.status == base.FAILED and op.retryable is False
    assert "refused the credentials of user" in (op.error or "") and "HTTP 401" in (op.error or "")
    good = bmc.endpoint(None).password.reveal()
    for text in (op.error or "", str(op.to_dict()), caplog.text, repr(bmc.endpoint(wrong))):
        assert wrong not in text and good not in text
    after = bmc.system()
    assert after["PowerState"] == before["PowerState"] and after["Boot"] == before["Boot"]
    assert bmc.cd()["Inserted"] is not True


def test_an_unreachable_bmc_is_retried_then_reported_retryable(bmc: Bmc) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    drv = bmc.driver()
    drv.endpoints = lambda n: type(bmc.endpoint(None))(
        **{**bmc.endpoint(None).__dict__, "address": f"http://127.0.0.1:{closed}"}
    )
    op = drv.wait(drv.power(bmc.node, True, request_id="u").request_id)
    assert op.status == base.FAILED and op.retryable is True
    assert f"BMC http://127.0.0.1:{closed} is unreachable" in (op.error or "") and "after 2 attempts" in (
        op.error or ""
    )


def test_firmware_the_bmc_does_not_list_fails_before_anything_changes(bmc: Bmc) -> None:
    before = bmc.system()
    drv = bmc.driver()
    op = drv.wait(drv.provision(bmc.node, image=IMAGE, firmware={"nic_fw": "1.0"}, request_id="f").request_id)
    assert op.status == base.FAILED and "lists no firmware component 'nic_fw'" in (op.error or "")
    assert bmc.system()["Boot"] == before["Boot"] and bmc.cd()["Inserted"] is not True


def test_hardware_events_come_from_the_log_service(bmc: Bmc) -> None:
    drv = bmc.driver()
    if bmc.twin is not None:
        bmc.twin.region.inject(bmc.node, Fault(kind="xid", xid=79, gpu=3))
    op = drv.wait(drv.hardware_events(bmc.node, request_id="ev").request_id)
    assert op.status == base.SUCCEEDED, op.error
    if bmc.twin is None:  # sushy-tools' fake systems have no LogServices: the driver says there is nothing
        assert op.result["entries"] == [] and "LogServices" not in bmc.system()
    else:
        (entry,) = op.result["entries"]
        assert entry["message"] == "XID 79 on GPU 3" and entry["severity"] == "Critical"
