"""The control plane drives the twin through its Redfish service (what ``velyrix up --redfish-port`` does):
intake and delivery go through the Redfish driver, and the three BMC failures end in a clear error on the
node, in a state the transition table allows, with nothing half-done."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from tests.reconcile.world import World
from velyrix.controlplane import bmc_credentials, db
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import phases
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.fleet import states, transitions
from velyrix.fleet.drivers.redfish import RedfishSettings
from velyrix.fleet.drivers.redfish.driver import RedfishDriver
from velyrix.ops import redfish_twin

SETTINGS = RedfishSettings(
    attempts=2,
    backoff_s=0.0,
    poll_s=0.05,
    firmware_timeout_s=1.0,
    request_timeout_s=5.0,
    image_url=redfish_twin.IMAGE_URL,
    firmware_url=redfish_twin.FIRMWARE_URL,
)


def _world(tmp: Path, nodes: int) -> tuple[World, redfish_twin.RedfishTwin]:
    url = f"sqlite:///{tmp / 'velyrix.db'}"
    engine = db.make_engine(url)
    db.upgrade(url=url, engine=engine)
    sm = orm.sessionmaker(engine, expire_on_commit=False)
    runtime = FleetRuntime.twin(
        sm,
        "us-east-1",
        node_counts={"hgx-h200-8g": nodes},
        seed=5,
        delays=False,
        settings=phases.ReconcileSettings(poll_s=0.0, retry_backoff_s=0.0),
    )
    twin = redfish_twin.serve(runtime, password="twin-secret-0042", settings=SETTINGS)
    with sm() as s:
        tenant = models.Tenant(name="acme", display_name="ACME")
        s.add(tenant)
        s.commit()
        tid = tenant.id
    return World(engine, sm, runtime, tid), twin


@pytest.fixture
def rf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[World, redfish_twin.RedfishTwin]]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    w, twin = _world(tmp_path, 3)
    yield w, twin
    twin.close()
    w.engine.dispose()


def _enroll(world: World) -> None:
    world.runtime.enroll()
    assert redfish_twin.settle_intake(world.runtime, 60.0)


def _history_is_allowed(world: World, name: str) -> list[str]:
    """The node's provisioning moves, each checked against the transition table; the states it went to."""
    (node,) = world.nodes(name=name)
    with world.sessionmaker() as s:
        rows = s.scalars(
            sa.select(models.NodeTransition)
            .where(models.NodeTransition.node_id == node.id, models.NodeTransition.field == "provisioning_state")
            .order_by(models.NodeTransition.at, models.NodeTransition.id)
        ).all()
        moves = [(r.from_state, r.to_state) for r in rows if r.from_state is not None]
    assert all(transitions.allowed(a, b) for a, b in moves), moves
    return [b for _, b in moves]


def test_the_twin_is_enrolled_and_a_cluster_delivered_through_redfish(
    rf: tuple[World, redfish_twin.RedfishTwin],
) -> None:
    world, twin = rf
    _enroll(world)
    assert all(n.fleet_stage == states.PRODUCTION for n in world.nodes())
    cid = world.declare("rf-one", 1)
    world.settle(timeout_s=60)
    assert world.cluster(cid).phase == phases.READY, world.cluster(cid).conditions
    (node,) = world.nodes(cluster_id=cid)
    assert twin.bmcs.node(node.name).image == world.runtime.reconciler.settings.image  # booted from the virtual CD
    assert twin.bmcs.virtual_cd(node.name)["Image"].endswith(f"/{twin.bmcs.node(node.name).image}.iso")
    assert isinstance(world.runtime.driver, RedfishDriver)
    with world.sessionmaker() as s:  # the password is in the database only sealed
        row = s.scalar(sa.select(models.BmcCredential).where(models.BmcCredential.node_name == node.name))
        assert row is not None and b"twin-secret-0042" not in row.sealed_password


@pytest.mark.parametrize("fault", ["bad_password", "unreachable"])
def test_a_bmc_that_refuses_or_does_not_answer_fails_intake_with_the_reason(
    rf: tuple[World, redfish_twin.RedfishTwin], fault: str
) -> None:
    world, twin = rf
    victim = sorted(twin.bmcs.region.nodes)[0]
    with world.sessionmaker() as s:
        row = s.scalar(sa.select(models.BmcCredential).where(models.BmcCredential.node_name == victim))
        assert row is not None
        if fault == "bad_password":
            row.sealed_password = bmc_credentials.seal("an-old-password", victim)
        else:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                row.address = f"http://127.0.0.1:{sock.getsockname()[1]}"
        s.commit()
    _enroll(world)
    (node,) = world.nodes(name=victim)
    assert node.provisioning_state == states.FAILED
    expect = "refused the credentials of user 'velyrix' (HTTP 401)" if fault == "bad_password" else "is unreachable"
    assert node.last_error and node.last_error.startswith("inspection failed: BMC") and expect in node.last_error
    assert "an-old-password" not in node.last_error and "twin-secret-0042" not in node.last_error
    assert _history_is_allowed(world, victim) == [states.INSPECTING, states.FAILED]
    assert twin.bmcs.node(victim).image is None and twin.bmcs.bmc(victim).boot_enabled == "Disabled"
    others = [n for n in world.nodes() if n.name != victim]
    assert all(n.fleet_stage == states.PRODUCTION and n.provisioning_state == states.AVAILABLE for n in others)


def test_a_firmware_update_that_never_completes_takes_the_node_out_cleanly(
    rf: tuple[World, redfish_twin.RedfishTwin],
) -> None:
    world, twin = rf
    _enroll(world)
    for name in twin.bmcs.region.nodes:  # every node runs an older BIOS; one BMC never finishes a flash
        twin.bmcs.node(name).firmware["bios"] = "0.0.1"
    cid = world.declare("rf-hang", 1)
    for _ in range(20):  # until the cluster holds its node (allocation comes before provisioning)
        world.runtime.reconciler.run_once()
        if world.nodes(cluster_id=cid):
            break
    (first,) = world.nodes(cluster_id=cid)
    twin.bmcs.hang_updates(first.name)
    world.settle(timeout_s=60)
    assert world.cluster(cid).phase == phases.READY
    (victim,) = world.nodes(name=first.name)
    assert victim.cluster_id is None and victim.fleet_stage == states.QUARANTINED
    assert victim.provisioning_state == states.AVAILABLE  # deprovisioned and sanitized after the failure
    assert victim.last_error and "updating bios to" in victim.last_error and "still Running" in victim.last_error
    assert "boot settings were not touched" in victim.last_error
    assert twin.bmcs.node(victim.name).firmware["bios"] == "0.0.1"  # the flash never landed
    assert twin.bmcs.bmc(victim.name).boot_enabled == "Disabled" and twin.bmcs.bmc(victim.name).cd_image is None
    assert _history_is_allowed(world, victim.name)[-4:] == [
        states.PROVISIONING,
        states.DEPROVISIONING,
        states.SANITIZING,
        states.AVAILABLE,
    ]
