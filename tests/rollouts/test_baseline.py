"""A completed rollout moves the region's signed firmware baseline (audited): a node provisioned afterwards
at the baseline runs the new version with no drift finding, and a node left on the old version is flagged."""

from __future__ import annotations

import sqlalchemy as sa

from tests.rollouts.conftest import example_spec
from velyrix import catalog
from velyrix.controlplane.db import models
from velyrix.controlplane.evidence import firmware
from velyrix.ops.rollouts import running, service, states
from velyrix.testing import rollouts as tr

OLD, NEW = "570.133.20", "580.95.05"


def test_the_signed_baseline_follows_a_completed_rollout_and_flags_a_node_left_behind() -> None:
    region = tr.build(0, per_cluster=2, free=12)
    try:
        firmware.publish("us-east-1", catalog.region("us-east-1").firmware_baseline, region.driver.firmware_image)
        assert firmware.load("us-east-1").versions["driver"] == OLD
        spec = example_spec(
            target_clusters=["acme-train"],
            target_node_type=None,
            stages=["production"],
            canary_nodes=0,
            canary_soak_s=0.0,
        )
        with region.sessionmaker() as s:
            row, _ = service.apply(s, region.world, spec, "test")
            s.commit()
        assert (
            running.drive(region.sessionmaker, row.id, region.world, region.advance, poll_s=300.0) == states.COMPLETED
        )

        manifest = firmware.load("us-east-1")  # signature verified
        assert manifest.versions["driver"] == NEW
        assert manifest.versions["bios"] == "1.6.2"  # what the rollout did not touch stays pinned
        with region.sessionmaker() as s:
            (event,) = s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.action == "firmware.baseline"))
            assert event.detail["changed"] == {"driver": [OLD, NEW]} and "driver_580" in event.actor

        upgraded, behind = region.clusters["acme-train"][0], region.clusters["globex-train"][0]
        assert region.sim.node(upgraded).firmware["driver"] == NEW
        assert region.sim.node(behind).firmware["driver"] == OLD
        for node, problem in ((upgraded, None), (behind, f"driver {OLD} != {NEW}")):
            if problem:  # a node whose flash leaves the old driver running (as it ran before the rollout)
                region.driver.stick_firmware(node, "driver", OLD)
            op = region.driver.provision(node, image="ubuntu-24.04", firmware=manifest.versions, request_id=f"p-{node}")
            while not op.done:
                region.advance(60.0)
                op = region.driver.operation(f"p-{node}")
            _, found = firmware.check(manifest, op.result or {})
            assert (found is None) if problem is None else (found is not None and problem in found), (node, found)
    finally:
        region.close()
