"""A node sent back to burn-in (health's release of a repaired node, ``ops.remediation.node_reports``) is tested
again before it is sold: the intake asks the driver for a new acceptance run, not the first burn-in's (request
ids are deduped by the driver, so reusing the first one's id would sell the node on its old results)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.reconcile.world import World, make_world
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile.store import move
from velyrix.fleet import states
from velyrix.fleet.drivers.sim.faults import Fault


@pytest.fixture
def small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    w = make_world(tmp_path, node_count=4)
    yield w
    w.engine.dispose()


def _back_to_burn_in(world: World, name: str) -> None:
    with world.sessionmaker() as s:
        node = s.scalar(sa.select(models.Node).where(models.Node.name == name))
        assert node is not None and node.fleet_stage == states.PRODUCTION
        move(s, node, states.QUARANTINED, actor="test", reason="xid 79")
        move(s, node, states.BURN_IN, actor="test", reason="fixed and clean again: burn-in")
        s.commit()


def _stage(world: World, name: str) -> str:
    return next(n.fleet_stage for n in world.nodes(name=name))


def test_a_node_back_in_burn_in_is_tested_again(small: World) -> None:
    name = small.nodes()[0].name
    small.sim.inject(name, Fault("slow_gpu", gpu=6, factor=0.5))  # the repair did not hold: a GPU at half speed
    _back_to_burn_in(small, name)
    while small.runtime.reconciler.intake():
        pass
    assert _stage(small, name) == states.QUARANTINED  # the new run measured the slow GPU: not sold
    assert "gpu6" in (small.nodes(name=name)[0].last_error or "").lower()
    small.sim.repair(name)
    _back_to_burn_in_from_quarantine(small, name)
    while small.runtime.reconciler.intake():
        pass
    assert _stage(small, name) == states.PRODUCTION  # a third run, on the repaired node: sold again


def _back_to_burn_in_from_quarantine(world: World, name: str) -> None:
    with world.sessionmaker() as s:
        node = s.scalar(sa.select(models.Node).where(models.Node.name == name))
        assert node is not None and node.fleet_stage == states.QUARANTINED
        move(s, node, states.BURN_IN, actor="test", reason="repaired: burn-in")
        s.commit()
