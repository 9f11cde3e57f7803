"""The ladder's reboot rung and the cluster's scheduler (``ops/remediation/node_reports.py``): a reboot of a node
that stays in its cluster goes to the scheduler after health's drain, so that it reboots the node once its jobs
end (Slurm: ``scontrol reboot ASAP``, ``slurm_drains.SlurmSeam.reboot``, tested on a real Slurm in
tests/scheduler/test_slurm_twin.py). A node taken out (XID 79: fatal, quarantined) leaves the cluster, spare or
not, so its reboot does not go there (its health drain stays the scheduler's record: test_delivered_slurm.py).
The scheduler here is the seam for tests (``InMemorySeam``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reconcile.test_node_reports_e2e import CLUSTER, Up
from tests.reconcile.test_running_cloud_e2e import POLL_S, inject, until
from tests.scheduler.delivered_seed import add_delivered, migrated
from velyrix.controlplane.node_evidence import Judgement
from velyrix.health.drains import InMemorySeam
from velyrix.health.engine import Reason, Verdict
from velyrix.health.ladder import Action, Level
from velyrix.ops.remediation import node_reports


class Schedulers:
    """What ``velyrix up --slurm`` puts at ``app.state.schedulers``: one scheduler seam per cluster."""

    def __init__(self) -> None:
        self.seams: dict[str, InMemorySeam] = {}

    def seam(self, cluster_id: str) -> InMemorySeam:
        return self.seams.setdefault(cluster_id, InMemorySeam())


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Up]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    plane = Up(f"sqlite:///{tmp_path / 'velyrix.db'}", twin_nodes=8, agent_interval_s=POLL_S)  # 7 + 1 spare
    yield plane
    plane.stop()


def test_nodes_taken_out_leave_their_scheduler_drained_without_a_reboot_there(cloud: Up) -> None:
    schedulers = cloud.app.state.schedulers = Schedulers()
    cid = cloud.http.post("/v1/clusters", headers=cloud.tenant, json={**CLUSTER, "node_count": 7}).json()["id"]
    cloud.wait_phase(cid, "Ready")
    first, second = sorted(n["name"] for n in cloud.members(cid))[2:4]
    seam = schedulers.seam(cid)
    for victim in (first, second):  # the one spare replaces the first; none is left for the second
        inject(cloud, victim, kind="xid", xid=79, gpu=3)
        until(f"{victim} out of the cluster", lambda v=victim: v not in {n["name"] for n in cloud.members(cid)})
    assert [(e.op, e.node) for e in seam.events] == [("drain", first), ("drain", second)]
    events = cloud.http.get(f"/v1/clusters/{cid}", headers=cloud.tenant).json()["status"]["events"]
    assert any(e["reason"] == "NodeLost" and second in e["message"] for e in events)


def test_a_reboot_rung_that_keeps_the_node_goes_to_its_scheduler_after_the_drain(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cp.db'}"
    with migrated(url) as s:
        (node,) = add_delivered(s, "train", ["use1-h200-0000"], spec={}, fleet_stage="production")
        why = Reason("check:reboot", "check", "the node asks for a reboot", Level.DEGRADED, Action.REBOOT)
        verdict = Verdict(node.name, Level.DEGRADED, Action.REBOOT, (why,))  # not fatal: the node stays
        seam = InMemorySeam()
        done = node_reports.handle(s, node, Judgement(verdict, None, None), driver=None, scheduler=seam)
        assert [(e.op, e.node) for e in seam.events] == [("drain", node.name), ("reboot", node.name)]
        assert seam.holders(node.name)["health"].startswith("velyrix:health: REBOOT")  # it comes back drained
        assert f"reboot {node.name} in the cluster's scheduler once its jobs end" in done
        assert node.cluster_id == "c1" and node.fleet_stage == "production"
