"""Against a real Slurm: generated config, policy apply, quotas, job mapping, drains, reports, Fair Tree.

One session-scoped twin (see conftest.py); tests run in file order and the Fair Tree comparison comes
last because it waits for slurmctld's next fair-share pass (at most PriorityCalcPeriod = 1 min).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from velyrix import errors
from velyrix.ops.scheduler import accounting, commands, fairtree, policies, reports, slurm_drains

pytestmark = pytest.mark.slurm
POLICY = Path(__file__).parent / "data" / "policy.hcl"


def _wait(predicate, timeout_s: float = 30.0, every_s: float = 0.3):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"condition not met within {timeout_s} s")


def _state_of(twin, node: str) -> str:
    """The node's ``State=`` as ``scontrol show node`` gives it (e.g. ``IDLE``, ``MIXED+DRAIN``)."""
    shown = twin.slurm.out("scontrol", "show", "node", node)
    return shown.split("State=", 1)[1].split()[0]


def test_generated_config_brings_up_a_multinode_slurm_with_typed_gpus(slurm_twin):
    out = slurm_twin.slurm.out("sinfo", "-h", "-N", "-o", "%N %G")
    nodes = dict(line.split() for line in out.splitlines())
    # (S:0): gres.conf binds the GPUs to the cores of socket 0 (the twin's nodes have one socket)
    assert nodes == {f"twin-00{i}": "gpu:h200:8(S:0)" for i in range(1, 5)}
    assert len(slurm_twin.procs) == 4 + 4  # munged, mariadbd, slurmdbd, slurmctld and one slurmd per node


def test_apply_shows_a_readable_diff_then_a_second_apply_changes_nothing(slurm_twin, velyrix, monkeypatch):
    first = [c.describe() for c in slurm_twin.first_changes]
    assert "+ account llm  parent=research  fairshare=3  grptres=gres/gpu=16" in first
    assert "+ user daemon in vision  account=vision  fairshare=2" in first
    monkeypatch.setenv("SLURM_CONF", slurm_twin.slurm.conf)
    again = velyrix("scheduler", "apply", str(POLICY))
    assert again.exit_code == 0, again.stderr
    assert "No changes" in again.stdout
    tree = slurm_twin.slurm.out("sacctmgr", "-n", "-P", "show", "assoc", "format=Account,ParentName,GrpTRES")
    assert "llm|research|gres/gpu=16" in tree.splitlines()


def test_plan_shows_a_changed_share_and_apply_converges_it(slurm_twin, velyrix, monkeypatch, tmp_path):
    monkeypatch.setenv("SLURM_CONF", slurm_twin.slurm.conf)
    changed = tmp_path / "p.hcl"
    changed.write_text(
        POLICY.read_text().replace(
            'shares      = 2\n  users       = ["bin"]', 'shares      = 5\n  users       = ["bin"]'
        )
    )
    plan = velyrix("scheduler", "plan", str(changed))
    assert "~ account search  fairshare: 2 -> 5" in plan.stdout
    assert velyrix("scheduler", "apply", str(changed)).exit_code == 0
    assert "No changes" in velyrix("scheduler", "plan", str(changed)).stdout
    assert "~ account search  fairshare: 5 -> 2" in velyrix("scheduler", "apply", str(POLICY)).stdout


def _reason(twin, job_id: int) -> str:
    return twin.slurm.out("squeue", "-h", "-j", str(job_id), "-o", "%T %r").strip()


def test_quota_holds_a_teams_job_at_its_gpu_limit(slurm_twin):
    twin = slurm_twin
    twin.wait_jobs_done(twin.workload)
    running = twin.sbatch(account="llm", gpus=12, wrap="sleep 30")
    _wait(lambda: _reason(twin, running).startswith("RUNNING"))
    over = twin.sbatch(account="llm", gpus=8, wrap="sleep 1")  # 12 + 8 > llm's 16
    within = twin.sbatch(account="llm", gpus=4, wrap="sleep 1")  # 12 + 4 = 16: fits
    qos_a = twin.sbatch("--qos=high", account="vision", uid=2, gpus=16, wrap="sleep 1")
    qos_b = twin.sbatch("--qos=high", account="vision", uid=2, gpus=12, wrap="sleep 1")  # QOS high: 24 GPUs
    try:
        assert _wait(lambda: "AssocGrpGRES" in _reason(twin, over))
        assert _wait(lambda: "QOSGrpGRES" in _reason(twin, qos_b))
        twin.wait_jobs_done([within])
    finally:
        twin.slurm.run("scancel", str(running), str(over), str(qos_a), str(qos_b), check=False)
    twin.wait_jobs_done([running, over, qos_a, qos_b])


def test_high_qos_preempts_low_qos_work(slurm_twin):
    twin = slurm_twin
    low = twin.sbatch("--qos=low", account="vision", uid=1, gpus=32, wrap="sleep 60")  # the whole cluster
    high = None
    try:
        _wait(lambda: _reason(twin, low).startswith("RUNNING"))
        high = twin.sbatch("--qos=high", account="vision", uid=2, gpus=8, wrap="sleep 1")
        _wait(
            lambda: (
                twin.slurm.run("squeue", "-h", "-j", str(high), check=False).stdout.strip() == ""
                or _reason(twin, high).startswith("RUNNING")
            ),
            60,
        )
        state = twin.slurm.out("sacct", "-X", "-n", "-P", "-j", str(low), "-o", "State").split()
        assert state and state[0] in ("PREEMPTED", "REQUEUED", "PENDING"), state
        assert not _reason(twin, low).startswith("RUNNING")
    finally:
        twin.slurm.run("scancel", str(low), *([str(high)] if high else []), check=False)
    twin.wait_jobs_done([low] + ([high] if high else []))


def test_prolog_writes_the_gpu_to_job_mapping_and_epilog_removes_it(slurm_twin):
    twin = slurm_twin
    job = twin.sbatch(account="llm", gpus=3, wrap="sleep 4")
    root = Path(twin.options.job_map_dir.split("/${")[0])

    def mapped() -> dict[str, str]:
        return {str(p.relative_to(root)): p.read_text().strip() for p in root.glob("*/[0-9]*")}

    def job_files() -> dict[str, str]:
        files = {k: v for k, v in mapped().items() if v == str(job)}
        return files if len(files) >= 3 else {}  # the prolog writes one file per GPU: wait for all of them

    files = _wait(job_files)
    assert len(files) == 3 and len({k.split("/")[0] for k in files}) == 1
    twin.wait_jobs_done([job])
    _wait(lambda: str(job) not in mapped().values())


def test_failing_health_check_in_the_prolog_drains_the_node_and_requeues_the_job(slurm_twin):
    twin = slurm_twin
    twin.mark_unhealthy("twin-002")
    job = twin.sbatch("-w", "twin-002", account="llm", gpus=1, wrap="sleep 1")
    try:
        _wait(lambda: "drain" in twin.slurm.out("sinfo", "-h", "-n", "twin-002", "-o", "%T"))
        reason = twin.slurm.out("sinfo", "-h", "-n", "twin-002", "-o", "%E").strip()
        assert "prolog" in reason.lower()
        assert slurm_drains.SlurmSeam(twin.slurm).holders("twin-002") == {"admin": reason}
        _wait(lambda: twin.slurm.out("squeue", "-h", "-j", str(job), "-o", "%T").strip() == "PENDING")
    finally:
        twin.mark_unhealthy("twin-002", False)
        twin.slurm.run("scancel", str(job), check=False)
        twin.slurm.out("scontrol", "update", "NodeName=twin-002", "State=RESUME")
    twin.wait_jobs_done([job])


def test_health_drain_shows_in_sinfo_and_undrain_clears_only_our_own(slurm_twin):
    twin = slurm_twin
    seam = slurm_drains.SlurmSeam(twin.slurm, node_map={"fleet-node-4": "twin-004"})
    seam.drain("fleet-node-4", "xid 79 (GPU fell off the bus)", "health")
    reasons = twin.slurm.out("sinfo", "-R", "-h", "-o", "%N|%E")
    assert "twin-004|velyrix:health: xid 79 (GPU fell off the bus)" in reasons.splitlines()
    seam.drain("twin-004", "switch maintenance", "noc")
    assert set(seam.holders("twin-004")) == {"health", "noc"}
    seam.undrain("fleet-node-4", "health")
    assert seam.holders("twin-004") == {"noc": "velyrix:noc: switch maintenance"}
    seam.undrain("twin-004", "noc")
    assert not seam.holders("twin-004")
    # Back in service (slurmctld pings a resumed node before it drops the '*' of "not responding yet").
    _wait(lambda: twin.slurm.out("sinfo", "-h", "-n", "twin-004", "-o", "%t").strip() in ("idle", "mix", "alloc"))

    twin.slurm.out("scontrol", "update", "NodeName=twin-003", "State=DRAIN", "Reason=bad fan")
    try:
        with pytest.raises(errors.DrainOwnershipError):
            seam.undrain("twin-003", "health")
        assert "drain" in twin.slurm.out("sinfo", "-h", "-n", "twin-003", "-o", "%T").strip()
        seam.drain("twin-003", "ecc storm", "health")
        seam.undrain("twin-003", "health")
        assert seam.holders("twin-003") == {"admin": "bad fan"}
    finally:
        twin.slurm.out("scontrol", "update", "NodeName=twin-003", "State=RESUME")


def test_reboot_request_keeps_the_holders_drain(slurm_twin):
    twin = slurm_twin
    seam = slurm_drains.SlurmSeam(twin.slurm)
    job = twin.sbatch("-w", "twin-001", account="llm", gpus=1, wrap="sleep 30")  # keeps the reboot pending
    _wait(lambda: twin.slurm.out("squeue", "-h", "-j", str(job), "-o", "%T").strip() == "RUNNING")
    try:
        seam.drain("twin-001", "xid 79", "health")
        seam.reboot("twin-001", "xid 79 recovery")
        node = twin.slurm.out("scontrol", "show", "node", "twin-001")
        assert "REBOOT_REQUESTED" in node and "NextState=DOWN" in node
        assert seam.holders("twin-001") == {"health": "velyrix:health: xid 79"}
    finally:
        twin.slurm.run("scontrol", "cancel_reboot", "twin-001", check=False)
        twin.slurm.run("scancel", str(job), check=False)
    seam.undrain("twin-001", "health")
    twin.wait_jobs_done([job])
    # slurmctld's own record of the node (scontrol): sinfo alone was seen to go on answering "mix" for
    # minutes after the job's end on this Slurm (22.05), while scontrol already said IDLE
    _wait(lambda: _state_of(twin, "twin-001") == "IDLE")


def test_unknown_node_gets_the_closest_name(slurm_twin):
    seam = slurm_drains.SlurmSeam(slurm_twin.slurm)
    with pytest.raises(errors.UnknownNameError) as exc:
        seam.drain("twin-04", "x", "health")
    assert "twin-004" in (exc.value.hint or "")


def test_busy_gpu_hours_come_from_the_agents_telemetry_through_prometheus(slurm_twin):
    """Slurm prolog → job mapping → agent (twin GPUs at 90% load) → Prometheus → busy GPU-seconds per job."""
    from velyrix.agent import service
    from velyrix.agent.collectors.sim import SimCollector
    from velyrix.fleet.drivers.sim import SimClock, SimRegion
    from velyrix.ops.scheduler import telemetry
    from velyrix.testing.prometheus import PrometheusServer, prometheus_binary

    if prometheus_binary() is None:
        pytest.skip("apt-get install prometheus")
    twin = slurm_twin
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 4}, seed=3, clock=SimClock(speed=1.0))
    jobmap = Path(twin.options.job_map_dir.split("/${")[0])
    servers = []
    for sim_host, node in zip(region.nodes, twin.cluster.node_names, strict=True):
        region.nodes[sim_host].load_pct = 90.0
        servers.append(
            service.serve(
                service.MetricsSource([service.NodeSource(SimCollector(region.nodes[sim_host], region), jobmap / node)])
            )
        )
    prom = PrometheusServer({"velyrix-agent": [f"127.0.0.1:{s.port}" for s in servers]}, interval_s=1.0)
    try:
        prom.start()
        t_from = time.time()
        jobs = {
            twin.sbatch(account="vision", uid=1, gpus=4, wrap="sleep 6"): 4,
            twin.sbatch(account="search", uid=2, gpus=2, wrap="sleep 6"): 2,
        }
        twin.wait_jobs_done(list(jobs))
        time.sleep(3)  # the epilog's removal is scraped
        t_to = time.time()
        busy = telemetry.busy_gpu_seconds(prom.url, t_from, t_to, step_s=1.0)
    finally:
        prom.stop()
        for s in servers:
            s.close()
    elapsed = _sacct_used(twin)
    for job, gpus in jobs.items():
        # 90% of each allocated GPU, within two scrape intervals of the job's GPUs (prolog/epilog timing).
        assert busy.get(job, 0.0) == pytest.approx(0.9 * gpus * elapsed[job], abs=0.9 * gpus * 2.0), (job, busy)
    table = accounting.load_jobs(twin.slurm, int(t_from) - 5, int(t_to) + 5)
    data = reports.build(table, int(t_from) - 5, int(t_to) + 5, busy_gpu_s=busy)
    vision = next(t for t in data["teams"] if t["team"] == "vision")
    assert vision["utilization"] == pytest.approx(0.9, abs=0.3)


def _sacct_used(twin) -> dict[int, int]:
    """Seconds every job the tests submitted ran, summed over its runs (a preempted job runs twice),
    once all of them reached slurmdbd: ``sacct -D`` lists every run."""
    ids = [j for j, _, _ in twin.submitted]

    def rows():
        out = commands.parse_pipe(
            twin.slurm.out(
                "sacct", "-X", "-P", "-a", "-D", "-j", ",".join(map(str, ids)), "-o", "JobID,ElapsedRaw,State"
            )
        )
        if {int(r["JobID"]) for r in out} != set(ids):
            return None
        if any(r["State"].split()[0] in ("RUNNING", "PENDING") for r in out):
            return None
        return out

    used: dict[int, int] = {}
    for r in _wait(rows, 60):
        used[int(r["JobID"])] = used.get(int(r["JobID"]), 0) + int(r["ElapsedRaw"])
    return used


def test_report_gpu_hours_per_team_equal_what_the_jobs_used(slurm_twin, velyrix, monkeypatch):
    twin = slurm_twin
    twin.wait_jobs_done([j for j, _, _ in twin.submitted])
    elapsed = _sacct_used(twin)
    expected: dict[str, float] = {}
    for job, account, gpus in twin.submitted:
        expected[account] = expected.get(account, 0.0) + gpus * elapsed[job] / 3600.0
    for (account, _, gpus, seconds), job in zip(
        __import__("tests.scheduler.conftest", fromlist=["WORKLOAD"]).WORKLOAD, twin.workload, strict=True
    ):
        # Slurm counts whole seconds; a loaded 2-core machine starts jobs late but never early.
        assert seconds <= elapsed[job] <= seconds + 10, (account, gpus, elapsed[job])

    t_from, t_to = int(twin.workload_start) - 60, int(time.time()) + 60
    parents = accounting.account_parents(twin.slurm)
    teams = {a for a, v in expected.items() if v > 0}

    last: dict[str, Any] = {}

    def settled():
        # slurmdbd records a job's allocation, and its final end time, shortly after sacct -P first lists
        # the job (a second apart was seen under load): wait until the report stops disagreeing, then
        # compare what it last said.
        data = reports.build(
            accounting.load_jobs(twin.slurm, t_from, t_to),
            t_from,
            t_to,
            cost_center_of=accounting.cost_centers(parents),
        )
        last["data"] = data
        if {t["team"] for t in data["teams"]} != teams:
            return None
        hours = {t["team"]: t["gpu_hours"] for t in data["teams"]}
        return data if all(abs(hours[a] - expected[a]) <= 1e-5 for a in teams) else None

    try:
        data = _wait(settled, 60)
    except AssertionError:
        data = last["data"]  # the assertions below say how it differs
    got = {t["team"]: t["gpu_hours"] for t in data["teams"]}
    for team, hours in got.items():
        assert hours == pytest.approx(expected[team], abs=1e-5), (team, got, expected, elapsed)
    ccs = {c["cost_center"]: c["gpu_hours"] for c in data["cost_centers"]}
    assert ccs["research"] == pytest.approx(expected["llm"] + expected["vision"], abs=1e-5)

    monkeypatch.setenv("SLURM_CONF", twin.slurm.conf)
    fmt = "%Y-%m-%dT%H:%M:%S"
    args = [
        "scheduler",
        "report",
        "--from",
        time.strftime(fmt, time.gmtime(t_from)),
        "--to",
        time.strftime(fmt, time.gmtime(t_to)),
    ]
    res = velyrix(*args, "--format", "json")
    assert res.exit_code == 0, res.stderr
    cli = json.loads(res.stdout)
    assert {t["team"]: t["gpu_hours"] for t in cli["teams"]} == got
    assert {t["team"]: t["cost_center"] for t in cli["teams"]}["search"] == "product"
    assert velyrix(*args, "--format", "html").stdout.count("<svg") == 3
    # sacct -P, the fast path for long periods, reads the same allocations.
    fast = reports.build(accounting.load_jobs(twin.slurm, t_from, t_to, source="parsable"), t_from, t_to)
    assert {t["team"]: t["gpu_hours"] for t in fast["teams"]} == got


def test_fair_tree_factors_match_sshare(slurm_twin, velyrix, monkeypatch):
    twin = slurm_twin
    _wait(lambda: not twin.slurm.out("squeue", "-h").strip(), 60)
    settled = time.time()
    # slurmctld recomputes fair-share every PriorityCalcPeriod (1 min here): wait for a pass after the last job.
    _wait(lambda: twin.last_priority_calc() > settled + 0.5, 75, 1.0)
    rows, typed = accounting.load_shares(twin.slurm)
    tree = fairtree.from_sshare(rows)
    ours = fairtree.compute(tree)
    slurm_users = {(s.account, s.user): s.fairshare for s in typed if s.user}
    assert len(slurm_users) == 6
    assert sum(1 for s in typed if s.user and s.raw_usage > 0) == 5, rows
    for key, factor in slurm_users.items():
        assert ours[key] == pytest.approx(factor, abs=1e-6), (key, ours, slurm_users)
    # The what-if from the policy file alone (its shares, today's usage) gives the same answer.
    policy = policies.load(POLICY)
    usage = {(s.account, s.user): s.raw_usage for s in typed if s.user}
    whatif = fairtree.compute(fairtree.from_policy(policy, usage, {("root", "root"): 1.0}))
    assert whatif == pytest.approx(ours)
    monkeypatch.setenv("SLURM_CONF", twin.slurm.conf)
    res = velyrix("scheduler", "fairshare", "--policy", str(POLICY), "--json")
    assert res.exit_code == 0, res.stderr
    for row in json.loads(res.stdout):
        assert row["velyrix"] == pytest.approx(row["slurm"], abs=1e-6)
        assert row["what_if"] == pytest.approx(row["slurm"], abs=1e-6)
    # Level fair-share of every association too (sshare rounds RawUsage to whole seconds).
    for a in tree.walk()[1:]:
        s = next(x for x in typed if (x.account, x.user) == (a.account, a.user or ""))
        if s.level_fs is not None and not math.isinf(s.level_fs):
            assert a.level_fs == pytest.approx(s.level_fs, rel=0.05), (a.account, a.user)
