"""Slurm delivered with the cluster (issue 19), one story through what ``velyrix up --slurm`` runs and the CLI:
a 4-node ``scheduler = "slurm"`` cluster ends Ready with its own slurmctld (accounting in the shared slurmdbd);
``scheduler env`` points ``sinfo`` at 4 idle nodes with ``gpu:h200:8`` and ``srun -N 4 hostname`` prints the
4 node names; a job's GPUs carry its ``hpc_job`` label and load in the node's metrics; XID 79 under that job
drains the node in that Slurm with a reason naming Velyrix (and the replacement joins it); scaling to 6 shows
6 nodes; destroy stops the controller and removes the accounts. Slurm starts once: the steps share it."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.reconcile.test_node_reports_e2e import Up
from velyrix.ops import twin_agents
from velyrix.ops.scheduler import local_slurm, twin_delivery

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

TF = """
provider "velyrix" {
  region = "us-east-1"
}
resource "velyrix_cluster" "train" {
  name       = "train"
  node_type  = "hgx-h200-8g"
  node_count = NODES
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
}
"""


def until(what: str, check: Callable[[], Any], timeout_s: float = 240.0, every_s: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (got := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every_s)
    return got


def start_plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Up:
    """What `velyrix up --slurm` runs, on the database and twin state file under ``tmp_path`` (a second call
    is a restart: same VELYRIX_HOME, same database)."""
    # agents poll once at start, then the test polls the victim's agent itself (test_up_exporter.py does too)
    up = Up(
        f"sqlite:///{tmp_path / 'velyrix.db'}",
        twin_nodes=12,
        agent_interval_s=3600.0,
        state_file=tmp_path / "twin.json",
    )
    schedulers = twin_delivery.install(up.app, up.runtime)  # what `velyrix up --slurm` hands the reconcilers
    assert up.runtime.sim is not None
    up.exporter = twin_agents.serve_exporter(up.runtime.sim, port=0, job_map_root=schedulers.job_map_root)
    monkeypatch.setenv("VELYRIX_ENDPOINT", up.url)
    monkeypatch.setenv("VELYRIX_API_KEY", up.tenant["Authorization"].split()[1])
    return up


def stop_plane(up: Up) -> None:
    """Stop `velyrix up --slurm`: the control plane, then every Slurm daemon it started."""
    up.stop()
    schedulers = up.app.state.schedulers
    schedulers.close()
    assert not any(e.controller and e.controller.daemons.procs for e in schedulers.entries.values()) and not (
        schedulers.accounting and schedulers.accounting.daemons.procs
    )


@pytest.fixture
def plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Up]:
    missing = local_slurm.missing_binaries()
    if missing:
        pytest.skip(f"delivered Slurm needs {', '.join(missing)} (scripts/bootstrap.sh installs them)")
    if os.geteuid() != 0:
        pytest.skip("slurmd runs as root to start jobs (CI runs as root)")
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    up = start_plane(tmp_path, monkeypatch)
    try:
        yield up
    finally:
        while getattr(up, "restarted_as", None) is not None:  # the test restarted it: stop the last one
            up = up.restarted_as
        stop_plane(up)


def restart(old: Up, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Up:
    """Stop `velyrix up --slurm` and start it again on the same VELYRIX_HOME and database."""
    stop_plane(old)
    new = start_plane(tmp_path, monkeypatch)
    old.restarted_as = new  # type: ignore[attr-defined]
    return new


def condition(up: Up, cid: str) -> dict[str, Any]:
    cluster = up.http.get(f"/v1/clusters/{cid}", headers=up.tenant).json()
    return {c["type"]: c for c in cluster["status"]["conditions"]}["SchedulerReady"]  # type: ignore[no-any-return]


def slurm_env(velyrix: Any) -> dict[str, str]:
    res = velyrix("scheduler", "env", "train")
    assert res.exit_code == 0, res.stdout + res.stderr
    pairs = [line.removeprefix("export ").split("=", 1) for line in res.stdout.splitlines()]
    return {**os.environ, **{k: v.strip("'") for k, v in pairs}}


def tool(env: dict[str, str], *argv: str) -> str:
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def sinfo(env: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Slurm node → (compact state, gres) from the delivered Slurm."""
    out = tool(env, "sinfo", "-h", "-N", "-o", "%N %t %G")
    return {n: (s, g) for n, s, g in (line.split()[:3] for line in out.splitlines() if line.strip())}


def members(up: Up, cid: str) -> set[str]:
    return {n["name"] for n in up.members(cid)}


def gpu_series(up: Up, node: str) -> Iterator[tuple[dict[str, str], float]]:
    """(labels, value) of every ``DCGM_FI_DEV_GPU_UTIL`` series in the node's scrape."""
    assert up.exporter is not None
    r = httpx.get(f"http://{up.exporter.host}:{up.exporter.port}/nodes/{node}/metrics", timeout=10)
    assert r.status_code == 200, r.text
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            if s.name == "DCGM_FI_DEV_GPU_UTIL":
                yield s.labels, s.value


def test_slurm_delivered_with_the_cluster_follows_it_from_ready_to_destroy(
    plane: Up, velyrix: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tf = tmp_path / "train.tf"
    tf.write_text(TF.replace("NODES", "4"))
    res = velyrix("apply", str(tf), "-auto-approve")
    assert res.exit_code == 0, res.stdout + res.stderr
    cluster = plane.http.get("/v1/clusters", params={"name": "train"}, headers=plane.tenant).json()["items"][0]
    cid = cluster["id"]
    assert cluster["status"]["phase"] == "Ready"
    cond = {c["type"]: c for c in cluster["status"]["conditions"]}["SchedulerReady"]
    assert cond["status"] == "True" and "4 nodes registered and idle" in cond["message"], cond

    env = slurm_env(velyrix)
    nodes = members(plane, cid)
    # (S:0-1): gres.conf binds GPUs 0-3 to the first socket's cores, 4-7 to the second's
    assert sinfo(env) == {n: ("idle", "gpu:h200:8(S:0-1)") for n in nodes}
    printed = tool(env, "srun", "-N", "4", "hostname").split()
    assert sorted(printed) == sorted(nodes)

    # a job on one node: its GPUs carry the job's id (the prolog's job map) and run loaded in the twin
    job = tool(env, "sbatch", "--parsable", "-N", "1", "--gpus=8", "-o", "/dev/null", "--wrap", "sleep 600")
    job_id = job.strip().split(";")[0]
    victim = until("the job running", lambda: tool(env, "squeue", "-h", "-j", job_id, "-t", "R", "-o", "%N").strip())
    until(
        "the job's label and load on the node's GPUs",
        lambda: (
            sorted((lab["gpu"], lab["hpc_job"], v) for lab, v in gpu_series(plane, victim))
            == sorted((str(i), job_id, 100.0) for i in range(8))
        ),
    )
    idle_node = sorted(nodes - {victim})[0]
    assert {(lab["hpc_job"], v) for lab, v in gpu_series(plane, idle_node)} == {("", 0.0)}

    # XID 79 under the job: the node's agent reports it, health drains it in this Slurm with a Velyrix reason
    monkeypatch.setenv("VELYRIX_API_KEY", plane.operator_key)
    assert velyrix("sim", "inject", victim, "--xid", "79", "--gpu", "3").exit_code == 0
    assert plane.agents is not None
    agent = plane.agents.agents[victim]

    seen: list[str] = []  # the victim in this Slurm, while it is still there

    def drained() -> str:
        agent.tick()
        shown = subprocess.run(["scontrol", "show", "node", victim], env=env, capture_output=True, text=True)
        seen.append(shown.stdout)
        # slurmdbd keeps the node's events after the replacement took it out of this Slurm
        out = tool(env, "sacctmgr", "-n", "-P", "show", "event", "All_Time", f"nodes={victim}", "format=reason")
        return next((r for r in out.splitlines() if r.startswith("velyrix:health")), "")

    reason = until("the health drain in Slurm", drained, every_s=1.0)
    assert "xid" in reason.lower(), reason
    # replaced at once, the victim left this Slurm drained: the rung's reboot runs on the quarantined node,
    # not as a Slurm reboot (tests/reconcile/test_reboot_to_scheduler.py: a node that stays gets one)
    assert not any(re.search(r"\bState=\S*REBOOT_", o) for o in seen), seen
    monkeypatch.setenv("VELYRIX_API_KEY", plane.tenant["Authorization"].split()[1])

    # the replacement joins this Slurm, the failed node leaves it
    def replaced() -> set[str] | None:
        now = members(plane, cid)
        got = sinfo(env)
        return now if victim not in now and set(got) == now and all(s == "idle" for s, _ in got.values()) else None

    nodes = until("the replacement registered and idle", replaced)
    assert len(nodes) == 4
    plane.wait_phase(cid, "Ready", timeout_s=120.0)  # delivered again (its Scheduler step came first)

    tf.write_text(TF.replace("NODES", "6"))
    res = velyrix("apply", str(tf), "-auto-approve")
    assert res.exit_code == 0, res.stdout + res.stderr

    def six() -> set[str] | None:
        now = members(plane, cid)
        return now if len(now) == 6 and set(sinfo(env)) == now else None

    nodes = until("6 nodes in sinfo", six)
    assert len(nodes) == 6 and {s for s, _ in sinfo(env).values()} == {"idle"}
    monkeypatch.setenv("SLURM_CONF", env["SLURM_CONF"])  # eval "$(velyrix scheduler env train)"
    report = velyrix("scheduler", "report", "--from", "2026-01-01", "--to", "2031-01-01", "--format", "json")
    assert report.exit_code == 0 and '"acme"' in report.stdout, report.stdout + report.stderr  # the tenant's account

    # `velyrix up --slurm` stopped and started again: the Ready cluster's Slurm is delivered again, with the
    # same node names, SchedulerReady false until it is back, and its accounting records kept in slurmdbd
    plane = restart(plane, tmp_path, monkeypatch)
    assert plane.wait_phase(cid, "Ready")["status"]["phase"] == "Ready"
    waiting = condition(plane, cid)  # set before `up` serves (starting Slurm takes seconds more)
    assert (waiting["status"], waiting["reason"]) == ("False", "Redelivering"), waiting
    back = until(
        "SchedulerReady true again", lambda: condition(plane, cid)["status"] == "True" and condition(plane, cid)
    )
    assert back["reason"] == "Delivered" and "6 nodes registered and idle" in back["message"], back
    env = slurm_env(velyrix)
    assert sinfo(env) == {n: ("idle", "gpu:h200:8(S:0-1)") for n in nodes}
    before = tool(env, "sacct", "-M", env["SLURM_CLUSTER_NAME"], "-X", "-n", "-P", "-j", job_id, "-o", "jobid")
    assert before.split() == [job_id]

    schedulers = plane.app.state.schedulers
    controller, name = schedulers.entries[cid].controller, env["SLURM_CLUSTER_NAME"]
    gone = velyrix("destroy", str(tf), "-auto-approve")
    assert gone.exit_code == 0, gone.stdout + gone.stderr
    assert not controller.running() and cid not in schedulers.entries
    assert subprocess.run(["scontrol", "ping"], env=env, capture_output=True, timeout=60).returncode != 0
    assocs = tool(env, "sacctmgr", "-n", "-P", "show", "assoc", f"cluster={name}", "format=account")
    assert set(assocs.split()) <= {"root"}  # the tenant's account is gone ...
    kept = tool(env, "sacct", "-M", name, "-X", "-n", "-P", "-j", job_id, "-o", "jobid")
    assert kept.split() == [job_id]  # ... its jobs' records stay in slurmdbd
