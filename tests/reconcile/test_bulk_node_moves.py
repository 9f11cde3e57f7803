"""Node rows written in bulk (``store.flush_nodes``) keep the ORM's optimistic lock: a row another
transaction changed since it was read is not overwritten (``StaleDataError``, which the reconcilers retry),
and what a bulk write stored reads back as written."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from tests.reconcile.world import World
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile.store import flush_nodes, move
from velyrix.fleet import states


def _node(s: orm.Session, name: str) -> models.Node:
    node = s.scalar(sa.select(models.Node).where(models.Node.name == name))
    assert node is not None
    return node


def test_a_bulk_write_stores_every_change_and_bumps_the_version(world: World) -> None:
    names = [n.name for n in world.nodes()[:3]]
    with world.sessionmaker() as s:
        rows = [_node(s, n) for n in names]
        before = {n.name: n.version for n in rows}
        for n in rows:
            move(s, n, states.QUARANTINED, actor="test", reason="bulk")
            n.hardware = {**n.hardware, "note": n.name}
        assert flush_nodes(s, rows) == 3
        assert not any(s.is_modified(n) for n in rows)  # the ORM has nothing left to write for them
        s.commit()
    with world.sessionmaker() as s:
        for name in names:
            n = _node(s, name)
            assert (n.fleet_stage, n.hardware["note"], n.version) == (states.QUARANTINED, name, before[name] + 1)


def test_a_row_changed_since_it_was_read_is_not_overwritten(world: World) -> None:
    name = world.nodes()[0].name
    with world.sessionmaker() as first, world.sessionmaker() as second:
        a, b = _node(first, name), _node(second, name)
        a.last_error = "first writer"
        flush_nodes(first, [a])
        first.commit()
        b.last_error = "second writer, from a stale read"
        with pytest.raises(orm.exc.StaleDataError):
            flush_nodes(second, [b])
        second.rollback()
    with world.sessionmaker() as s:
        assert _node(s, name).last_error == "first writer"
