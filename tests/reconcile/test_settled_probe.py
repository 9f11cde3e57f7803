"""A settled cluster costs the reconcile loop one statement (``cluster.settled``), a settled region one
statement a pass (``cluster.settled_in``), and that shortcut never hides work: a changed spec, a node taken out
of service or a deletion is acted on by the loop's own paths (``Reconciler.reconcile_one`` and
``Reconciler.run_once``), not only by ``settle``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import sqlalchemy as sa

from tests.reconcile.world import World
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import cluster as cluster_mod
from velyrix.controlplane.reconcile import phases
from velyrix.controlplane.reconcile.store import move
from velyrix.fleet import states


def _loop(world: World, cid: str, passes: int = 200) -> None:
    """What the runtime's loop does for one cluster: ``reconcile_one`` until it says settled (None)."""
    for _ in range(passes):
        if world.runtime.reconciler.reconcile_one(cid) is None:
            return
    raise AssertionError(f"{cid} still busy after {passes} passes")


def _settled(world: World, cid: str) -> bool:
    with world.sessionmaker() as s:
        return cluster_mod.settled(s, cid)


def _quarantine(world: World, name: str) -> None:
    """What health does to a failing node: it leaves production (the cluster row itself does not change)."""
    with world.sessionmaker() as s:
        node = s.scalar(sa.select(models.Node).where(models.Node.name == name))
        assert node is not None
        move(s, node, states.QUARANTINED, actor="test", reason="health")
        s.commit()


def test_a_ready_cluster_is_settled_until_its_spec_changes(world: World) -> None:
    cid = world.declare("train", 8)
    _loop(world, cid)
    _loop(world, cid)  # the full check that records the settled version
    assert world.cluster(cid).phase == phases.READY and _settled(world, cid)
    world.update(cid, node_count=16)
    assert not _settled(world, cid)
    _loop(world, cid)
    assert world.cluster(cid).phase == phases.READY and len(world.nodes(cluster_id=cid)) == 16
    world.check_invariants()


def test_a_node_taken_out_of_service_ends_the_shortcut_and_is_replaced(world: World) -> None:
    cid = world.declare("train", 8)
    _loop(world, cid)
    _loop(world, cid)
    victim = world.nodes(cluster_id=cid)[3].name
    _quarantine(world, victim)
    assert not _settled(world, cid)  # the cluster row itself did not change
    _loop(world, cid)
    members = {n.name for n in world.nodes(cluster_id=cid)}
    assert victim not in members and len(members) == 8 and world.cluster(cid).phase == phases.READY
    world.check_invariants()


def test_a_deletion_ends_the_shortcut(world: World) -> None:
    cid = world.declare("train", 8)
    _loop(world, cid)
    _loop(world, cid)
    world.destroy(cid)
    assert not _settled(world, cid)
    _loop(world, cid)
    assert world.cluster(cid).phase == phases.DELETED and not world.nodes(cluster_id=cid)


@contextlib.contextmanager
def _statements(world: World) -> Iterator[list[str]]:
    seen: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append(statement)

    sa.event.listen(world.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        sa.event.remove(world.engine, "before_cursor_execute", count)


def _pass(world: World) -> None:
    """One pass of the runtime's loop with every cluster due."""
    rec = world.runtime.reconciler
    rec._not_before.clear()
    rec.run_once()


def test_a_pass_over_a_settled_region_is_one_statement_whatever_its_clusters(world: World) -> None:
    ids = [world.declare(f"train-{i}", 4) for i in range(4)]
    for cid in ids:
        _loop(world, cid)
        _loop(world, cid)
    with _statements(world) as seen:
        _pass(world)
    assert len(seen) == 1, seen


def test_a_pass_acts_on_the_one_cluster_that_changed_and_no_other(world: World) -> None:
    quiet, busy, gone = (world.declare(name, 4) for name in ("quiet", "busy", "gone"))
    for cid in (quiet, busy, gone):
        _loop(world, cid)
        _loop(world, cid)
    victim = world.nodes(cluster_id=busy)[1].name
    _quarantine(world, victim)
    world.update(quiet, node_count=6)
    world.destroy(gone)
    for _ in range(200):
        _pass(world)
        if all(_settled(world, cid) for cid in (quiet, busy)) and world.cluster(gone).phase == phases.DELETED:
            break
    assert world.cluster(quiet).phase == phases.READY and len(world.nodes(cluster_id=quiet)) == 6
    members = {n.name for n in world.nodes(cluster_id=busy)}
    assert victim not in members and len(members) == 4 and world.cluster(busy).phase == phases.READY
    assert world.cluster(gone).phase == phases.DELETED and not world.nodes(cluster_id=gone)
    world.check_invariants()
