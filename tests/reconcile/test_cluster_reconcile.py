"""Clusters from Pending to Ready on the twin, and every way back: replacement, scaling, destroy, failures."""

from __future__ import annotations

import copy

import sqlalchemy as sa

from tests.reconcile.world import World
from velyrix.controlplane.reconcile import phases, signing, tables
from velyrix.fleet import states
from velyrix.fleet.drivers.sim import Fault, SimDelays


def phase_path(world: World, cid: str) -> list[str]:
    return [h["phase"] for h in world.cluster(cid).phase_history]


def test_cluster_goes_pending_to_ready_on_whole_scalable_units(world: World) -> None:
    cid = world.declare("train", 64)
    world.settle()
    assert phase_path(world, cid) == [
        "Pending",
        "Allocating",
        "Provisioning",
        "Networking",
        "Storage",
        "Validating",
        "Ready",
    ]
    members = world.nodes(cluster_id=cid)
    assert len(members) == 64 and {n.provisioning_state for n in members} == {states.ACTIVE}
    assert {n.hardware["position"]["su"] for n in members} == {0, 1}  # two whole SUs, nothing elsewhere
    sim_node = world.sim.node(members[0].name)
    assert (
        sim_node.image and sim_node.networks["vlan"] == 1000 and sim_node.networks["pkey"] == 0x0001
    )  # the first key of the range (REFERENCE §1)
    assert members[0].hardware["firmware"] == world.sim.node(members[0].name).firmware
    world.check_invariants()


def test_acceptance_report_is_signed_and_tamper_evident(world: World) -> None:
    cid = world.declare("train", 16)
    world.settle()
    signed = world.report(cid)
    rep = signed["report"]
    assert rep["passed"] and len(rep["nodes"]) == 16 and not rep["replacements"]
    assert {t["test"] for t in rep["nodes"][0]["tests"]} == {"gpu_burn_in", "nvlink", "ib_ports", "local_nvme"}
    assert {r["test"] for r in rep["cluster_tests"]} == {"all_reduce", "storage"}
    assert signing.verify(signed, signing.public_key_b64("us-east-1")).valid
    forged = copy.deepcopy(signed)
    forged["report"]["nodes"][0]["tests"][0]["measured"] = 999.0
    assert not signing.verify(forged).valid


def test_bad_gpu_fails_burn_in_and_is_replaced(world: World) -> None:
    victim = "use1-h200-su00-n05"  # in the first SU, which a 32-node cluster takes whole
    world.sim.inject(victim, Fault("slow_gpu", gpu=6, factor=0.5))
    cid = world.declare("train", 32)
    world.settle()
    cluster = world.cluster(cid)
    assert cluster.phase == phases.READY
    rep = world.report(cid)["report"]
    (rec,) = rep["replacements"]
    assert rec["failed"] == victim and "gpu6/gemm" in rec["reason"] and rec["phase"] == "Validating"
    names = {n["name"] for n in rep["nodes"]}
    assert rec["replacement"] in names and victim not in names and len(names) == 32
    assert all(n["passed"] for n in rep["nodes"])
    (bad,) = world.nodes(name=victim)
    assert bad.cluster_id is None and bad.fleet_stage == states.QUARANTINED
    assert bad.provisioning_state == states.AVAILABLE  # deprovisioned and sanitized, but not sellable
    assert not world.sim.node(victim).tenant_data
    assert "Ready" in phase_path(world, cid) and phase_path(world, cid).count("Validating") == 2
    world.check_invariants()


def test_capacity_error_is_clear_and_spares_are_held_back(world: World) -> None:
    cid = world.declare("huge", 93)  # 96 nodes, 5 held back as spares
    world.settle()
    cluster = world.cluster(cid)
    assert cluster.phase == phases.FAILED
    ready = next(c for c in cluster.conditions if c["type"] == "Ready")
    assert ready["reason"] == "InsufficientCapacity"
    assert "91 hgx-h200-8g nodes available" in ready["message"] and "5 more held back as spares" in ready["message"]
    assert not world.nodes(cluster_id=cid)


def test_scale_up_then_down(world: World) -> None:
    cid = world.declare("train", 32)
    world.settle()
    world.update(cid, node_count=40)
    world.settle()
    assert world.cluster(cid).phase == phases.READY and len(world.nodes(cluster_id=cid)) == 40
    world.update(cid, node_count=8)
    world.settle()
    members = world.nodes(cluster_id=cid)
    assert world.cluster(cid).phase == phases.READY and len(members) == 8
    freed = [n for n in world.nodes() if n.cluster_id is None and n.provisioning_state == states.AVAILABLE]
    assert len(freed) == 88 and not any(world.sim.node(n.name).tenant_data for n in freed)
    world.check_invariants()


def test_destroy_returns_nodes_releases_networks_keeps_volumes(world: World) -> None:
    cid = world.declare("train", 16, object_tb=50.0)
    world.settle()
    world.destroy(cid)
    world.settle()
    assert world.cluster(cid).phase == phases.DELETED
    assert not world.nodes(cluster_id=cid)
    with world.sessionmaker() as s:
        from velyrix.controlplane.db import models

        assert not s.scalars(sa.select(tables.NetworkAllocation)).all()
        vols = s.scalars(sa.select(models.Volume)).all()
    assert {v.tier for v in vols} == {"parallel_fs", "object"} and all(v.cluster_id is None for v in vols)
    world.check_invariants()
    again = world.declare("train2", 8)
    world.settle()
    assert world.cluster(again).phase == phases.READY


def test_destroy_may_delete_volumes(world: World) -> None:
    cid = world.declare("scratch", 8)
    world.settle()
    world.destroy(cid, delete_volumes=True)
    world.settle()
    with world.sessionmaker() as s:
        from velyrix.controlplane.db import models

        assert not s.scalars(sa.select(models.Volume)).all()


def test_live_clusters_get_distinct_vlans_and_partition_keys(world: World) -> None:
    ids = [world.declare(f"c{i}", 8) for i in range(4)]
    world.settle()
    nets = [world.sim.node(world.nodes(cluster_id=cid)[0].name).networks for cid in ids]
    assert len({n["vlan"] for n in nets}) == 4 and len({n["pkey"] for n in nets}) == 4
    world.destroy(ids[0])
    world.settle()
    reused = world.declare("c9", 8)
    world.settle()
    assert world.sim.node(world.nodes(cluster_id=reused)[0].name).networks["vlan"] == nets[0]["vlan"]


def test_temporary_failure_is_retried_permanent_one_replaces_the_node(world: World) -> None:
    world.driver.fail_next("provision", "use1-h200-su00-n01", "PXE timeout", retryable=True)
    world.driver.fail_next("provision", "use1-h200-su00-n02", "disk controller dead", retryable=False)
    cid = world.declare("train", 32)
    world.settle()
    rep = world.report(cid)["report"]
    names = {n["name"] for n in rep["nodes"]}
    assert "use1-h200-su00-n01" in names and "use1-h200-su00-n02" not in names
    assert [r["failed"] for r in rep["replacements"]] == ["use1-h200-su00-n02"]
    assert "disk controller dead" in rep["replacements"][0]["reason"]
    events = [e["reason"] for e in world.cluster(cid).events]
    assert "Retry" in events


def test_spares_are_not_for_new_clusters(world: World) -> None:
    a = world.declare("a", 91)
    world.settle()
    assert world.cluster(a).phase == phases.READY
    b = world.declare("b", 1)
    world.settle()
    assert world.cluster(b).phase == phases.FAILED


def test_no_healthy_spare_left_delivers_degraded(world: World) -> None:
    spares = [f"use1-h200-su02-n{i:02d}" for i in range(27, 32)]  # the 5 nodes a 91-node cluster leaves free
    for name in spares:
        world.sim.inject(name, Fault("ib_down", port=1))
    world.sim.inject("use1-h200-su00-n00", Fault("xid", gpu=0, xid=79))
    cid = world.declare("a", 91)
    world.settle()
    cluster = world.cluster(cid)
    assert cluster.phase == phases.DEGRADED
    ready = next(c for c in cluster.conditions if c["type"] == "Ready")
    assert "90 of 91 nodes delivered" in ready["message"]
    rep = world.report(cid)["report"]
    assert not rep["passed"] and len(rep["replacements"]) == 6 and rep["replacements"][-1]["replacement"] is None
    world.check_invariants()


def test_stuck_phase_times_out(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tests.reconcile.world import make_world

    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    w = make_world(
        tmp_path,
        40,
        delays=True,
        settings=phases.ReconcileSettings(poll_s=0.0, phase_timeout_s=0.3, retry_backoff_s=0.0),
    )
    w.driver.delays = SimDelays(provision_s=10**9)
    cid = w.declare("slow", 8)
    import pytest

    with pytest.raises(TimeoutError):
        w.settle(timeout_s=0.2)
    import time

    time.sleep(0.35)
    w.settle(timeout_s=5)
    c = w.cluster(cid)
    assert c.phase == phases.FAILED
    assert any(x["reason"] == "PhaseTimeout" and "Provisioning" in x["message"] for x in c.conditions)


def test_delays_make_operations_asynchronous(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tests.reconcile.world import make_world

    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    w = make_world(tmp_path, 40, delays=True)
    cid = w.declare("slow", 8)
    for _ in range(5):
        w.runtime.reconciler.reconcile_one(cid)
    assert w.cluster(cid).phase == phases.PROVISIONING  # waiting on the driver
    w.settle(timeout_s=20, tick=600.0)
    assert w.cluster(cid).phase == phases.READY
    assert w.sim.clock.now() >= SimDelays().provision_s + SimDelays().acceptance_s


def test_firmware_that_does_not_reach_the_baseline_replaces_the_node(world: World) -> None:
    world.driver.stick_firmware("use1-h200-su00-n04", "bios", "1.5.9")
    cid = world.declare("train", 32)
    world.settle()
    (rec,) = world.report(cid)["report"]["replacements"]
    assert rec["failed"] == "use1-h200-su00-n04" and rec["phase"] == "Provisioning"
    assert "bios 1.5.9 != 1.6.2" in rec["reason"]
    assert world.cluster(cid).phase == phases.READY


def test_all_reduce_is_judged_against_the_fabric_plan(world: World) -> None:
    from velyrix.controlplane.db import models
    from velyrix.controlplane.reconcile import validation

    plan = {"fabric_plan": {"gpus": 128, "compute": {"link_gbps": 400, "bisection_gbps": 12800}}}  # 2:1
    assert validation.expected_all_reduce(models.Cluster(plan=plan)) == 22.5
    plan["fabric_plan"]["compute"]["bisection_gbps"] = 25600  # 1:1
    assert validation.expected_all_reduce(models.Cluster(plan=plan)) == 45.0


def test_node_quarantined_by_health_in_service_is_replaced(world: World) -> None:
    from velyrix.controlplane.db import models
    from velyrix.controlplane.reconcile.store import move

    cid = world.declare("train", 32)
    world.settle()
    victim = world.nodes(cluster_id=cid)[3].name
    with world.sessionmaker() as s:  # what the health engine does on a fatal verdict
        node = s.scalars(sa.select(models.Node).where(models.Node.name == victim)).one()
        node.last_error = "XID 79 twice after reboot"
        move(s, node, states.QUARANTINED, actor="health", reason="XID 79 twice after reboot")
        s.commit()
    world.settle()
    cluster = world.cluster(cid)
    assert cluster.phase == phases.READY and phase_path(world, cid)[-2:] == ["Validating", "Ready"]
    members = world.nodes(cluster_id=cid)
    assert len(members) == 32 and victim not in {n.name for n in members}
    (rec,) = world.report(cid)["report"]["replacements"]
    assert rec["failed"] == victim and "XID 79 twice" in rec["reason"] and rec["phase"] == "Ready"
    (gone,) = world.nodes(name=victim)
    assert gone.provisioning_state == states.AVAILABLE and gone.fleet_stage == states.QUARANTINED
    world.check_invariants()
