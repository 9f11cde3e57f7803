"""The reconcile loop's pass reads the whole region's verdicts in one statement (``cluster.settled_in``), on
SQLite and PostgreSQL, and each verdict is the one-cluster probe's (``cluster.settled``): settled clusters,
a cluster with a node out of service, one whose spec changed and one being deleted, side by side."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from tests.reconcile.world import World, make_world
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import cluster as cluster_mod
from velyrix.controlplane.reconcile.store import move
from velyrix.fleet import states

REGION = "us-east-1"


@pytest.fixture
def world(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = make_world(tmp_path_factory.mktemp("region-pass"), node_count=24, url=db_url)
    yield w
    w.engine.dispose()


def _verdicts(world: World) -> tuple[dict[str, bool], dict[str, bool], int]:
    """(the region probe's verdicts, the one-cluster probe's, statements of the region probe)."""
    seen: list[str] = []

    def count(*args: object) -> None:
        seen.append(str(args[2]))

    with world.sessionmaker() as s:
        sa.event.listen(world.engine, "before_cursor_execute", count)
        try:
            region = cluster_mod.settled_in(s, REGION)
        finally:
            sa.event.remove(world.engine, "before_cursor_execute", count)
        one = {cid: cluster_mod.settled(s, cid) for cid in region}
    return region, one, len(seen)


def test_the_region_verdicts_are_the_one_cluster_verdicts_in_one_statement(world: World) -> None:
    ids = {name: world.declare(name, 2) for name in ("quiet", "sick", "grown", "gone")}
    world.settle()
    for cid in ids.values():  # the full check that records each settled version
        assert world.runtime.reconciler.reconcile_one(cid) is None
    region, one, statements = _verdicts(world)
    assert region == one == {cid: True for cid in ids.values()} and statements == 1

    victim = world.nodes(cluster_id=ids["sick"])[0].name
    with world.sessionmaker() as s:
        node = s.scalar(sa.select(models.Node).where(models.Node.name == victim))
        assert node is not None
        move(s, node, states.QUARANTINED, actor="test", reason="health")
        s.commit()
    world.update(ids["grown"], node_count=3)
    world.destroy(ids["gone"])
    region, one, statements = _verdicts(world)
    assert region == one and statements == 1
    assert region == {ids["quiet"]: True, ids["sick"]: False, ids["grown"]: False, ids["gone"]: False}
