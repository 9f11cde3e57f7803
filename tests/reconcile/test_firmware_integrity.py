"""Firmware integrity on the twin: the region's signed manifest (version and image SHA-256 per component),
checked at every provisioning with the node's Secure Boot state; a node that differs is replaced with the
component named and never becomes part of the Ready cluster; a tampered manifest is refused at start and
before provisioning; the acceptance report carries the firmware and isolation evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reconcile.world import World, make_world
from velyrix import errors
from velyrix.controlplane.db import models
from velyrix.controlplane.evidence import firmware
from velyrix.controlplane.reconcile import phases


def _members(world: World, cid: str) -> set[str]:
    with world.sessionmaker() as s:
        return {n.name for n in s.query(models.Node).filter_by(cluster_id=cid)}


@pytest.mark.parametrize(
    ("spoil", "named"),
    [("tamper_firmware", "cx7_firmware image digest"), ("disable_secure_boot", "secure boot is off")],
)
def test_a_node_that_differs_from_the_signed_baseline_never_reaches_ready(world: World, spoil: str, named: str) -> None:
    bad = "use1-h200-su00-n04"
    if spoil == "tamper_firmware":
        world.driver.tamper_firmware(bad, "cx7_firmware")  # same version string, another image
    else:
        world.driver.disable_secure_boot(bad)
    cid = world.declare("train", 32)
    world.settle()
    assert world.cluster(cid).phase == phases.READY
    assert bad not in _members(world, cid)
    (rec,) = world.report(cid)["report"]["replacements"]
    assert rec["failed"] == bad and named in rec["reason"]
    with world.sessionmaker() as s:
        node = s.query(models.Node).filter_by(name=bad).one()
        assert node.cluster_id is None and node.provisioning_state != "active"


def test_the_acceptance_report_carries_firmware_and_isolation_evidence(world: World) -> None:
    cid = world.declare("train", 8)
    world.settle()
    report = world.report(cid)["report"]
    integrity = report["integrity"]
    assert integrity["firmware"]["verified"] is True
    assert set(integrity["firmware"]["nodes"]) == {n["name"] for n in report["nodes"]}
    one = next(iter(integrity["firmware"]["nodes"].values()))
    assert one["secure_boot"]["enabled"] is True and one["components"]["bios"]["version"] == "1.6.2"
    manifest = firmware.load("us-east-1")
    assert one["components"]["bios"]["image_sha256"] == manifest.components["bios"][1]
    iso = integrity["isolation"]
    assert iso["single_tenant"] is True and iso["nodes_of_other_holders"] == []
    assert iso["vrf"].startswith("vrf-") and 1000 <= iso["vlan"] <= 3999 and iso["partition_key"].startswith("0x")


def test_a_tampered_manifest_is_refused_at_start_and_before_provisioning(world: World, tmp_path: Path) -> None:
    path = firmware.manifest_path("us-east-1")
    signed = json.loads(path.read_text())
    signed["report"]["components"][0]["image_sha256"] = "0" * 64
    path.write_text(json.dumps(signed))
    cid = world.declare("train", 4)
    world.settle()
    cluster = world.cluster(cid)
    assert cluster.phase == phases.FAILED
    (ready,) = [c for c in cluster.conditions if c["type"] == "Ready"]
    assert ready["reason"] == "FirmwareManifestRefused" and "signature does not match" in ready["message"]
    with pytest.raises(errors.InvalidInputError, match="firmware manifest .* refused: signature does not match"):
        make_world(tmp_path / "again")
