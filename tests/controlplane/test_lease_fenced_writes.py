"""Every write the reconciler makes on a cluster's behalf is fenced by the cluster's lease: a replica whose lease
was taken over neither heals the cluster (``reconcile.cluster.heal``, the path of node reports) nor records an
error in its ``cluster_work`` row (``Reconciler._record_error``); the replica that holds the lease does both.

PostgreSQL: real leases (``reconcile.leases``) on the db_url database, taken over by a second replica.
SQLite: one process and no leases (``velyrix up``): the same writes happen unfenced, as before."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from tests.reconcile.world import World, make_world
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import cluster as cluster_mod
from velyrix.controlplane.reconcile import leases
from velyrix.controlplane.reconcile.store import move
from velyrix.fleet import states

REGION = "us-east-1"


@pytest.fixture(scope="module")
def world(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = make_world(tmp_path_factory.mktemp("fenced"), node_count=20, url=db_url)
    yield w
    w.engine.dispose()


def _ready_with_one_out(world: World, name: str) -> tuple[str, str]:
    """A Ready cluster of 2 nodes, one of them quarantined by health (not yet replaced): (cluster id, node)."""
    cid = world.declare(name, 2)
    world.settle()
    assert world.cluster(cid).phase == "Ready"
    with world.sessionmaker() as s:
        node = s.scalars(sa.select(models.Node).where(models.Node.cluster_id == cid).order_by(models.Node.name)).first()
        assert node is not None
        move(s, node, states.QUARANTINED, actor="test", reason="xid 79")
        s.commit()
        return cid, node.name


def _work(world: World, cid: str) -> models.ClusterWork:
    with world.sessionmaker() as s:
        work = s.scalar(sa.select(models.ClusterWork).where(models.ClusterWork.cluster_id == cid))
        assert work is not None
        return work


def _heal(world: World, cid: str, held: leases.Leases | None) -> list[dict[str, Any]] | None:
    with world.sessionmaker() as s:
        cluster = s.get(models.Cluster, cid)
        assert cluster is not None
        records = cluster_mod.heal(s, cluster, held=held)
        s.commit()
        return records


def _taken_over(world: World) -> tuple[leases.Leases, leases.Leases]:
    """(old, new): ``old`` held every shard of the region, then its lease expired and ``new`` took them over;
    ``old``'s own clock still says it holds them (a replica paused past its lease)."""
    old = leases.Leases(world.sessionmaker, REGION, replica="old", shards=1, lease_s=0.5)
    old.refresh(force=True)
    assert old.held
    time.sleep(0.6)
    new = leases.Leases(world.sessionmaker, REGION, replica="new", shards=1, lease_s=30.0)
    new.refresh(force=True)
    assert set(new.held) == {0}
    old.held[0].until_mono = time.monotonic() + 60
    return old, new


def _postgres(db_url: str) -> None:
    if not db_url.startswith("postgresql"):
        pytest.skip("leases are PostgreSQL's (one SQLite process reconciles alone, tested below)")


def test_a_replica_whose_lease_moved_does_not_heal_the_cluster(world: World, db_url: str) -> None:
    _postgres(db_url)
    cid, out = _ready_with_one_out(world, "fenced-heal")
    old, new = _taken_over(world)
    before = list(_work(world, cid).replacements or [])
    assert _heal(world, cid, old) is None  # left to the holder
    assert list(_work(world, cid).replacements or []) == before
    assert {n.name for n in world.nodes(cluster_id=cid)} >= {out} and len(world.nodes(cluster_id=cid)) == 2
    records = _heal(world, cid, new)  # the holder replaces the node in its own transaction
    assert records is not None and [r["failed"] for r in records] == [out] and records[0]["replacement"]
    assert len(world.nodes(cluster_id=cid)) == 3  # the replacement joined; the quarantined one is on its way out
    new.close()


def test_a_replica_whose_lease_moved_does_not_record_an_error(world: World, db_url: str) -> None:
    _postgres(db_url)
    cid = world.declare("fenced-error", 1)
    world.settle()
    old, new = _taken_over(world)
    work = _work(world, cid)
    reconciler = world.runtime.reconciler
    try:
        reconciler.leases = old
        reconciler._record_error(cid, "OperationalError: from a replica that lost the lease")
        after = _work(world, cid)
        assert (after.last_error, after.retries) == (work.last_error, work.retries)
        reconciler.leases = new
        reconciler._record_error(cid, "OperationalError: from the holder")
        after = _work(world, cid)
        assert (after.last_error, after.retries) == ("OperationalError: from the holder", work.retries + 1)
    finally:
        reconciler.leases = None
        new.close()


def test_a_node_report_on_a_replica_without_the_lease_opens_the_incident_and_leaves_the_replacement(
    world: World, db_url: str
) -> None:
    from velyrix.health.engine import Reason, Verdict
    from velyrix.health.ladder import Action, Level
    from velyrix.ops.remediation import node_reports

    _postgres(db_url)
    cid, out = _ready_with_one_out(world, "fenced-report")
    old, new = _taken_over(world)
    reason = Reason("xid:79:gpu3", "xid", "GPU has fallen off the bus", Level.FATAL, Action.QUARANTINE, True)
    verdict = Verdict(out, Level.FATAL, Action.QUARANTINE, (reason,))
    with world.sessionmaker() as s:
        cluster = s.get(models.Cluster, cid)
        node = s.scalar(sa.select(models.Node).where(models.Node.name == out))
        assert cluster is not None and node is not None
        done = node_reports._replacer(s, cluster, verdict, 0.0, old)(node)
        s.commit()
    assert len(done) == 1 and done[0].startswith("incident INC-"), done
    assert not _work(world, cid).replacements and len(world.nodes(cluster_id=cid)) == 2
    events = [e for e in world.cluster(cid).events if e["reason"] == "NodeOutOfService"]
    assert len(events) == 1 and out in events[0]["message"] and "next pass" in events[0]["message"]
    new.close()


def test_one_process_without_leases_heals_and_records(world: World, db_url: str) -> None:
    cid, out = _ready_with_one_out(world, "alone")
    records = _heal(world, cid, None)
    assert records is not None and [r["failed"] for r in records] == [out]
    world.runtime.reconciler._record_error(cid, "OperationalError: alone")
    assert _work(world, cid).last_error == "OperationalError: alone"


def _report_to_a_server_without_a_fleet(world: World, cid: str) -> tuple[str, list[str]]:
    """A fatal report of one node of ``cid`` handled as ``velyrix server`` without ``--fleet-driver`` handles it
    (``node_reports.install``: no fleet runtime attached); returns (the node, what was done)."""
    from fastapi import FastAPI

    from velyrix.controlplane.node_evidence import Judgement
    from velyrix.health.engine import Reason, Verdict
    from velyrix.health.ladder import Action, Level
    from velyrix.ops.remediation import node_reports

    app = node_reports.install(FastAPI())
    app.state.fleet = None
    with world.sessionmaker() as s:
        node = s.scalars(sa.select(models.Node).where(models.Node.cluster_id == cid).order_by(models.Node.name)).first()
        assert node is not None
        reason = Reason("xid:79:gpu3", "xid", "GPU has fallen off the bus", Level.FATAL, Action.QUARANTINE, True)
        verdict = Verdict(node.name, Level.FATAL, Action.QUARANTINE, (reason,))
        done = app.state.report_handler(s, node, Judgement(verdict, None, None))
        s.commit()
        return node.name, done


def test_a_server_without_a_fleet_driver_leaves_the_replacement_to_the_lease_holder(world: World, db_url: str) -> None:
    _postgres(db_url)
    cid = world.declare("no-fleet-heal", 2)
    world.settle()
    assert world.cluster(cid).phase == "Ready"
    holder = leases.Leases(world.sessionmaker, REGION, replica="holder", shards=1, lease_s=30.0)
    holder.refresh(force=True)
    assert set(holder.held) == {0}  # the replica reconciling the cluster: not the server the report reached
    out, done = _report_to_a_server_without_a_fleet(world, cid)
    assert any(d.startswith("quarantine") for d in done) and any(d.startswith("incident INC-") for d in done), done
    assert not _work(world, cid).replacements and len(world.nodes(cluster_id=cid)) == 2  # no replacement written
    events = [e for e in world.cluster(cid).events if e["reason"] == "NodeOutOfService"]
    assert len(events) == 1 and out in events[0]["message"]
    reconciler = world.runtime.reconciler
    try:  # the holder's reconciler replaces the node on its next pass, fenced as every step
        reconciler.leases = holder
        reconciler.reconcile_one(cid)
        replacements = _work(world, cid).replacements
        assert [r["failed"] for r in replacements] == [out] and replacements[0]["replacement"]
    finally:
        reconciler.leases = None
        holder.close()
    world.settle()
    assert world.cluster(cid).phase == "Ready" and out not in {n.name for n in world.nodes(cluster_id=cid)}


def test_a_server_without_a_fleet_driver_on_sqlite_heals_in_the_report(world: World, db_url: str) -> None:
    if db_url.startswith("postgresql"):
        pytest.skip("one SQLite process: no leases")
    cid = world.declare("no-fleet-alone", 2)
    world.settle()
    assert world.cluster(cid).phase == "Ready"
    out, done = _report_to_a_server_without_a_fleet(world, cid)
    assert any(d.startswith(f"replace {out} with ") for d in done), done
    assert [r["failed"] for r in _work(world, cid).replacements] == [out]
