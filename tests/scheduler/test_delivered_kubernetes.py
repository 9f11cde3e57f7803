"""``scheduler = "kubernetes"`` (issue 19): through what ``velyrix up --slurm`` runs and the CLI, the cluster
is delivered with its Kueue and GPU manifests as artifacts (``velyrix scheduler kueue CLUSTER``) and its
condition says plainly that the twin has no Kubernetes control plane; ``scheduler env`` refuses it clearly.
Without a scheduler service (plain ``velyrix up``) a cluster says its scheduler was not delivered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.reconcile.test_node_reports_e2e import Up
from velyrix.ops.scheduler import twin_delivery

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Up]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    up = Up(f"sqlite:///{tmp_path / 'velyrix.db'}", twin_nodes=0, node_counts={"hgx-h100-8g": 8})
    monkeypatch.setenv("VELYRIX_ENDPOINT", up.url)
    monkeypatch.setenv("VELYRIX_API_KEY", up.tenant["Authorization"].split()[1])
    yield up
    up.stop()


def conditions(up: Up, name: str) -> dict[str, dict[str, Any]]:
    found = up.http.get("/v1/clusters", params={"name": name}, headers=up.tenant).json()["items"][0]
    return {c["type"]: c for c in found["status"]["conditions"]}


def test_kubernetes_cluster_carries_its_manifests_and_says_there_is_no_control_plane(
    plane: Up, velyrix: Any, tmp_path: Path
) -> None:
    schedulers = twin_delivery.install(plane.app, plane.runtime)  # what `velyrix up --slurm` hands the reconcilers
    try:
        tf = tmp_path / "k8s.tf"
        tf.write_text((ROOT / "examples" / "small-h100-k8s.tf").read_text())
        res = velyrix("apply", str(tf), "-auto-approve")
        assert res.exit_code == 0, res.stdout + res.stderr
        cond = conditions(plane, "research-finetune")["SchedulerReady"]
        assert cond["status"] == "False" and cond["reason"] == "ArtifactsOnly"
        assert "no Kubernetes control plane" in cond["message"]

        out = velyrix("scheduler", "kueue", "research-finetune")
        assert out.exit_code == 0, out.stderr
        docs = list(yaml.safe_load_all(out.stdout))
        kinds = [d["kind"] for d in docs]
        assert {"ResourceFlavor", "ClusterQueue", "LocalQueue", "ClusterPolicy"} <= set(kinds)
        queue = next(d for d in docs if d["kind"] == "ClusterQueue")
        quota = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
        assert quota == {"name": "nvidia.com/gpu", "nominalQuota": 32}  # the tenant's one queue: 4 nodes x 8
        labelled = {d["metadata"]["name"] for d in docs if d["kind"] == "Node"}
        members = {
            n["name"]
            for n in plane.members(plane.http.get("/v1/clusters", headers=plane.tenant).json()["items"][0]["id"])
        }
        assert labelled == members and len(members) == 4

        env = velyrix("scheduler", "env", "research-finetune")
        assert env.exit_code == 2 and "has no running Slurm (kubernetes: artifacts)" in env.stderr
        assert "Traceback" not in env.stderr
    finally:
        schedulers.close()


def test_without_a_scheduler_service_the_cluster_says_none_was_delivered(
    plane: Up, velyrix: Any, tmp_path: Path
) -> None:
    tf = tmp_path / "k8s.tf"
    tf.write_text((ROOT / "examples" / "small-h100-k8s.tf").read_text())
    assert velyrix("apply", str(tf), "-auto-approve").exit_code == 0
    cond = conditions(plane, "research-finetune")["SchedulerReady"]
    assert cond["status"] == "False" and cond["reason"] == "NotDelivered"
    gone = velyrix("scheduler", "kueue", "research-finetune")
    assert gone.exit_code != 0 and "has no delivered scheduler" in gone.stderr and "Traceback" not in gone.stderr


def test_a_slurm_that_cannot_start_fails_the_cluster_with_the_reason(
    plane: Up, velyrix: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from velyrix.ops.scheduler import local_slurm

    monkeypatch.setattr(local_slurm, "missing_binaries", lambda: ["slurmctld"])  # a host without Slurm
    schedulers = twin_delivery.install(plane.app, plane.runtime)
    try:
        tf = tmp_path / "slurm.tf"
        text = (ROOT / "examples" / "small-h100-k8s.tf").read_text()
        tf.write_text(text.replace('scheduler  = "kubernetes"', 'scheduler  = "slurm"'))
        res = velyrix("apply", str(tf), "-auto-approve")
        assert res.exit_code != 0 and "Traceback" not in res.stderr
        found = plane.http.get("/v1/clusters", params={"name": "research-finetune"}, headers=plane.tenant).json()
        cluster = found["items"][0]
        # its nodes passed acceptance, so the reconcilers' rule (steps.fail) settles it Degraded, not Ready
        assert cluster["status"]["phase"] == "Degraded"
        conds = {c["type"]: c for c in cluster["status"]["conditions"]}
        assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "SchedulerFailed"
        cond = conds["SchedulerReady"]
        assert cond["reason"] == "SchedulerFailed" and "slurmctld" in cond["message"]
        assert "bootstrap.sh" in cond["message"]
        assert schedulers.entries == {}  # nothing left running or half-started
    finally:
        schedulers.close()
