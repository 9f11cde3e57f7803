"""A rollout through the Slurm delivered with a tenant's cluster: the cluster's nodes are drained in its own
Slurm with a reason naming the rollout, a node is not upgraded while a job still runs on it, and every node
is resumed in that Slurm after re-validation. One Slurm (2 twin nodes) started once."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.rollouts.conftest import example_spec
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import scheduler_service as delivery
from velyrix.ops.rollouts import running, service, states
from velyrix.ops.scheduler import local_slurm, twin_delivery
from velyrix.testing import rollouts as tr

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

NEW = "580.95.05"


@pytest.fixture
def slurm_region() -> Iterator[tuple[tr.Region, twin_delivery.TwinSchedulers, dict[str, str]]]:
    missing = local_slurm.missing_binaries()
    if missing:
        pytest.skip(f"delivered Slurm needs {', '.join(missing)} (scripts/bootstrap.sh installs them)")
    if os.geteuid() != 0:
        pytest.skip("slurmd runs as root to start jobs (CI runs as root)")
    region = tr.build(0, per_cluster=2, free=12)
    root = Path(tempfile_root())
    schedulers = twin_delivery.TwinSchedulers(root, region.sim, remove_root=True)
    try:
        with region.sessionmaker() as s:
            acme = s.scalars(sa.select(models.Cluster).where(models.Cluster.name == "acme-train")).one()
            cid = acme.id
        hosts = region.clusters["acme-train"]
        target = delivery.Target(cid, "acme-train", "acme", "slurm", {h: "hgx-h200-8g" for h in hosts})
        deadline = time.monotonic() + 240.0
        while (got := schedulers.ensure(target)).state == delivery.DELIVERING:
            assert time.monotonic() < deadline, "timed out waiting for the delivered Slurm"
            time.sleep(0.25)
        assert got.state == delivery.READY, got.message
        region.world.schedulers = schedulers
        yield region, schedulers, {**os.environ, **got.env}
    finally:
        schedulers.close()
        region.close()


def tempfile_root() -> str:
    return tempfile.mkdtemp(prefix="vx-ro-", dir="/tmp")  # short: Unix socket paths stay under 108 bytes


def tool(env: dict[str, str], *argv: str) -> str:
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def node_state(env: dict[str, str], node: str) -> tuple[str, str]:
    """(State=..., Reason=...) of ``node`` in the delivered Slurm."""
    out = tool(env, "scontrol", "show", "node", node)
    state = out.split("State=", 1)[1].split()[0]
    reason = out.split("Reason=", 1)[1].split(" [")[0].strip() if "Reason=" in out else ""
    return state, reason


def test_a_rollout_drains_through_the_clusters_slurm_waits_for_its_job_and_resumes_the_nodes(
    slurm_region: tuple[tr.Region, twin_delivery.TwinSchedulers, dict[str, str]],
) -> None:
    region, _, env = slurm_region
    busy, idle = region.clusters["acme-train"]
    job = tool(env, "sbatch", "--parsable", "-w", busy, "-o", "/dev/null", "--wrap", "sleep 600").strip().split(";")[0]
    deadline = time.monotonic() + 120.0
    while tool(env, "squeue", "-h", "-j", job, "-t", "R", "-o", "%N").strip() != busy:
        assert time.monotonic() < deadline, "timed out waiting for the job to run"
        time.sleep(0.25)

    seen: dict[str, object] = {"draining_with_job": 0, "reasons": set()}

    def advance(seconds: float) -> None:
        """The twin's clock moves; while the job runs its node is draining in Slurm and not upgraded."""
        state, reason = node_state(env, busy)
        if "DRAIN" in state:
            seen["reasons"].add(reason)  # type: ignore[attr-defined]
        if "DRAIN" in state and ("ALLOCATED" in state or "MIXED" in state):
            assert busy not in {n for n, _, _ in region.driver.installs}, "upgraded under a running job"
            seen["draining_with_job"] = int(seen["draining_with_job"]) + 1  # type: ignore[call-overload]
            if seen["draining_with_job"] == 3:
                tool(env, "scancel", job)  # the tenant's job ends; the node is free to upgrade
        region.advance(seconds)

    spec = example_spec(
        target_clusters=["acme-train"], target_node_type=None, stages=["production"], canary_nodes=0, canary_soak_s=0.0
    )
    with region.sessionmaker() as s:
        row, _ = service.apply(s, region.world, spec, "test")
        s.commit()
        rollout_id = row.id
    assert running.drive(region.sessionmaker, rollout_id, region.world, advance, poll_s=300.0) == states.COMPLETED

    assert int(seen["draining_with_job"]) >= 3  # type: ignore[call-overload]
    assert any("velyrix:rollout-driver_580: gpu_driver 580.95.05" in r for r in seen["reasons"])  # type: ignore[attr-defined]
    assert {region.sim.node(h).firmware["driver"] for h in (busy, idle)} == {NEW}
    for h in (busy, idle):  # resumed in the cluster's Slurm after re-validation (drained no more)
        state, reason = node_state(env, h)
        assert state.split("+")[0] == "IDLE" and "DRAIN" not in state and "rollout" not in reason, (h, state, reason)
