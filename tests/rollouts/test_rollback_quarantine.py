"""A node that fails its validation after a rollback is not returned to service: it is quarantined through
the fleet's transition table, the rollout halts, and its status names the node; the other nodes are back."""

from __future__ import annotations

import sqlalchemy as sa

from tests.rollouts.conftest import example_spec
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import rollouts as models_rollouts
from velyrix.fleet import states as fleet_states
from velyrix.fleet.drivers.sim import defects
from velyrix.ops.rollouts import running, service, states
from velyrix.testing import rollouts as tr

OLD, NEW = "570.133.20", "580.95.05"


def test_a_node_failing_validation_after_the_rollback_is_quarantined_and_the_rollout_halts(region: tr.Region) -> None:
    region.driver.defects.ship(defects.parse("gpu_driver", NEW, "xid:79"))
    with region.sessionmaker() as s:
        row, _ = service.apply(s, region.world, example_spec(), "test")
        s.commit()
        rollout_id, staging = row.id, list(row.plan["waves"][0]["nodes"])
    victim = staging[0]
    broken: list[str] = []

    def advance(seconds: float) -> None:
        """Once the rollout rolls back, the victim's flash back to the old driver fails (it does not boot)."""
        with region.sessionmaker() as s:
            rolling_back = s.get(models_rollouts.Rollout, rollout_id).state == states.ROLLING_BACK  # type: ignore[union-attr]
        if rolling_back and not broken:
            region.driver.fail_next("upgrade", victim, "flash verification failed", retryable=False)
            broken.append(victim)
        region.advance(seconds)

    assert running.drive(region.sessionmaker, rollout_id, region.world, advance, poll_s=300.0) == states.HALTED
    assert broken == [victim]
    with region.sessionmaker() as s:
        report = service.status(s, service.get(s, "us-east-1", "driver_580"))
        node = s.scalars(sa.select(models.Node).where(models.Node.name == victim)).one()
        moved = s.scalars(
            sa.select(models.NodeTransition).where(
                models.NodeTransition.node_id == node.id, models.NodeTransition.to_state == fleet_states.QUARANTINED
            )
        ).all()
    assert node.fleet_stage == fleet_states.QUARANTINED
    assert len(moved) == 1 and "rollout driver_580" in moved[0].reason and "did not boot" in moved[0].reason
    assert report["state"] == states.HALTED
    assert f"quarantined {victim}" in report["reason"] and "failed validation after the rollback" in report["reason"]
    assert victim not in report["rolled_back_nodes"]
    assert sorted(report["rolled_back_nodes"]) == sorted(set(staging) - {victim})
    assert region.world.seam.holders(victim)  # not returned: still held out of service
    for h in set(staging) - {victim}:
        assert region.sim.node(h).firmware["driver"] == OLD and not region.world.seam.holders(h)
