"""The controller killed at 20 random points of a rollout (after a step is recorded, or after it was acted on
and before it was marked done) resumes from the journal: no node upgraded twice, none left drained, the
final state the same as an uninterrupted run. Every other kill also loses the driver's memory of its
requests (a restarted process), so the resume must look at the nodes themselves."""

from __future__ import annotations

import random

import pytest
import sqlalchemy as sa

from tests.rollouts.conftest import example_spec
from velyrix.controlplane.db.models import rollouts as models_rollouts
from velyrix.fleet.drivers.sim import SimDelays, SimDriver
from velyrix.fleet.drivers.sim import defects as sim_defects
from velyrix.ops.rollouts import journal, running, service, states
from velyrix.testing import rollouts as tr


class Killed(Exception):
    """The controller's process dying at a kill point."""


def _apply(region: tr.Region) -> str:
    with region.sessionmaker() as s:
        row, _ = service.apply(s, region.world, example_spec(), "test")
        s.commit()
        return row.id


def _outcome(region: tr.Region) -> dict[str, object]:
    with region.sessionmaker() as s:
        rows = list(s.scalars(sa.select(models_rollouts.RolloutStep)))
        state = s.scalars(sa.select(models_rollouts.Rollout.state)).one()
    return {
        "state": state,
        "firmware": {h: n.firmware["driver"] for h, n in region.sim.nodes.items()},
        "drained": sorted(h for h in region.sim.nodes if region.world.seam.holders(h)),
        "node_steps": sorted(r.key for r in rows if r.node is not None),
        "unfinished": sorted(r.key for r in rows if r.status != "done"),
    }


def _restart_driver(region: tr.Region) -> None:
    """A new driver over the same twin that forgets every request (what a process restart loses)."""
    fresh = SimDriver(region.sim, SimDelays())
    fresh.installs, fresh.defects = region.driver.installs, region.driver.defects
    region.driver = fresh
    region.world.driver = fresh


@pytest.fixture
def no_hook() -> object:
    yield None
    journal.crash_hook = None


def _drive(region: tr.Region, rollout_id: str) -> str:
    return running.drive(region.sessionmaker, rollout_id, region.world, region.advance, poll_s=300.0)


@pytest.mark.parametrize("bad", [False, True], ids=["good-driver", "bad-driver-rollback"])
def test_killed_at_20_random_points_the_rollout_resumes_to_the_uninterrupted_result(bad: bool, no_hook: object) -> None:
    calls = {"n": 0}

    def count(point: str, key: str) -> None:
        calls["n"] += 1

    reference = tr.build(5)
    if bad:
        reference.driver.defects.ship(sim_defects.parse("gpu_driver", "580.95.05", "xid:79"))
    journal.crash_hook = count
    try:
        _drive(reference, _apply(reference))
        expected = _outcome(reference)
    finally:
        reference.close()
    total = calls["n"]
    kill_at = set(random.Random(18 + bad).sample(range(1, total + 1), 20))

    region = tr.build(5)
    if bad:
        region.driver.defects.ship(sim_defects.parse("gpu_driver", "580.95.05", "xid:79"))
    calls["n"], kills = 0, 0

    def kill(point: str, key: str) -> None:
        calls["n"] += 1
        if calls["n"] in kill_at:
            raise Killed(f"{point} {key}")

    try:
        rollout_id = _apply(region)
        journal.crash_hook = kill
        while True:
            try:
                final = _drive(region, rollout_id)
                break
            except Killed:
                kills += 1
                if kills % 2:
                    _restart_driver(region)
        assert kills == 20
        assert final == (states.ROLLED_BACK if bad else states.COMPLETED)
        got = _outcome(region)
        installs = region.driver.installs
        assert len(installs) == len(set(installs)), "a node got the same version twice"
        assert got == expected
        assert got["drained"] == [] and got["unfinished"] == []
    finally:
        region.close()
