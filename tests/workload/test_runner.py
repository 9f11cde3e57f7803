"""A training job on the twin: its time adds up, faults cost what they should, saves go through the tier."""

from __future__ import annotations

import pytest

from velyrix.fleet.drivers.sim.faults import Fault
from velyrix.ops.workload import measure, runner, study
from velyrix.ops.workload.job import Overrides, job_from

QUIET = 1e-9  # failures per 1,000 node-days: a twin without spontaneous faults


def _run(acme, *, days=2.0, seed=0, policy="reactive", rate=QUIET, injections=(), overrides=None, plane=1200.0):
    spec, cluster = acme
    spec = (overrides or Overrides()).apply(spec)
    job = job_from(spec, storage_plane_gb_s=plane)
    cfg = runner.RunConfig(seed=seed, days=days, policy=policy, injections=tuple(injections), failure_rate=rate)
    return runner.run(job, cluster, cfg)


def test_every_second_of_the_run_is_accounted_for(acme):
    run = _run(acme, days=5.0, rate=None, seed=4)
    st = run.state
    assert sum(st.wall.values()) == pytest.approx(run.horizon_s, rel=1e-9)
    # work done = what was kept + what failures threw away; compute time = work + slowdowns + data stalls
    assert st.finish() + st.lost + st.slowed + st.data_stalled == pytest.approx(st.wall["compute"], rel=1e-6)
    fig = measure.figures(run)
    assert sum(fig["wall_shares"].values()) == pytest.approx(1.0, rel=1e-6)


def test_a_quiet_run_only_pays_for_its_saves(acme):
    run = _run(acme, days=1.0)
    fig = measure.figures(run)
    assert fig["job_interruptions"] == 0 and fig["restarts"] == 0
    # 800 TB writes 480 GB/s nominal; the twin's streams get 92% of it less the neighbours' share, so a
    # 5.68 TB save blocks 12.9-18 s, each 1,800 s of training
    assert 12.8 < fig["save_blocked_s_mean"] < 18.5
    assert fig["saves_complete"] == pytest.approx(86400 / (1800 + fig["save_blocked_s_mean"]), abs=1)
    assert fig["ettr"] == pytest.approx(1.0 - fig["checkpoint_stall_share"], abs=1e-3)


def test_an_injected_gpu_loss_costs_the_work_since_the_last_save_and_a_restart(acme):
    at = 12 * 3600.0 + 1000.0
    run = _run(acme, injections=[runner.Injection(at_s=at, fault=Fault("xid", xid=79), node=5)])
    fig = measure.figures(run)
    assert fig["job_interruptions"] == 1 and fig["restarts"] == 1 and fig["replacements"] == 1
    (stop,) = [e for e in run.state.log if e["kind"] == "stop"]
    assert stop["t_s"] == pytest.approx(at) and not stop["planned"]
    assert 0 < stop["lost_work_s"] < 1800.0
    assert fig["steps_lost"] == int(stop["lost_work_s"] // 12.0)  # 12 s steps
    (restart,) = [e for e in run.state.log if e["kind"] == "restart"]
    # detect 120 s + reschedule 300 s (checkpointing.toml) + reloading 5.68 TB at ~1 TB/s
    assert 420.0 < restart["s"] < 440.0
    (rep,) = [e for e in run.state.log if e["kind"] == "replacement"]
    assert rep["out"] == "acme-pretrain-006" and rep["in"].startswith("spare ")
    quiet = measure.figures(_run(acme))
    lost = (quiet["ettr"] - fig["ettr"]) * run.horizon_s
    # the restart shifts the saves that follow (the run makes fewer, at other moments of the neighbours'
    # traffic, and may end one save earlier or later): within a few saves' blocking time
    assert lost == pytest.approx(stop["lost_work_s"] + restart["s"], abs=3 * quiet["save_blocked_s_mean"])


def test_async_saves_block_for_the_staging_copy_only(acme):
    sync = measure.figures(_run(acme, days=1.0))
    asy = measure.figures(_run(acme, days=1.0, overrides=Overrides(mode="async")))
    assert asy["save_blocked_s_mean"] < 2.0 < 12.0 < sync["save_blocked_s_mean"]
    assert asy["ettr"] > sync["ettr"]


def test_async_saves_wait_when_the_previous_one_still_drains(acme):
    # 80 TB drains a 5.68 TB save in ~140 s: with a save every 60 s of training the job must wait
    fig = measure.figures(_run(acme, days=0.2, overrides=Overrides(mode="async", interval_s=60.0, parallel_fs_tb=80)))
    run = _run(acme, days=0.2, overrides=Overrides(mode="async", interval_s=60.0, parallel_fs_tb=80))
    assert any(e["kind"] == "stall" for e in run.state.log)
    assert fig["checkpoint_stall_share"] > 0.3


def test_the_storage_plane_caps_the_tier(acme):
    wide = measure.figures(_run(acme, days=0.5, plane=None))
    narrow = measure.figures(_run(acme, days=0.5, plane=48.0))
    assert narrow["save_blocked_s_mean"] > 5 * wide["save_blocked_s_mean"]


def test_proactive_health_drains_a_failing_node_at_a_checkpoint_before_it_fails(acme):
    fault = runner.Injection(at_s=3 * 3600.0, fault=Fault("ecc_dbe", gpu=2), node=7, precursor_s=6 * 3600.0)
    reactive = _run(acme, policy="reactive", injections=[fault])
    proactive = _run(acme, policy="proactive", injections=[fault])
    r, p = measure.figures(reactive), measure.figures(proactive)
    assert r["job_interruptions"] == 1 and r["caught_before_failure"] == 0
    assert p["job_interruptions"] == 0 and p["caught_before_failure"] == 1
    (stop,) = [e for e in proactive.state.log if e["kind"] == "stop"]
    assert stop["planned"] and stop["lost_work_s"] == pytest.approx(0.0, abs=1e-6)
    assert p["ettr"] > r["ettr"]


def test_a_slow_gpu_slows_the_whole_job_until_it_is_drained(acme):
    slow = runner.Injection(at_s=3600.0, fault=Fault("slow_gpu", gpu=0, factor=0.5), node=3)
    run = _run(acme, days=0.5, injections=[slow])
    fig = measure.figures(run)
    assert fig["slowdowns"] == 1 and fig["job_interruptions"] == 0
    assert 0 < run.state.slowed <= 60.0 * 0.5 + 1e-6  # reported within the agent's 60 s, then drained
    assert any(e["kind"] == "replacement" for e in run.state.log)


def test_same_seed_same_run(acme):
    a = measure.figures(_run(acme, days=3.0, rate=None, seed=9))
    b = measure.figures(_run(acme, days=3.0, rate=None, seed=9))
    assert a == b


def test_the_plan_and_the_twin_agree_on_a_few_seeds(acme):
    spec, cluster = acme
    summary = study.over_seeds(spec, cluster, [0, 1, 2], days=30.0, policy="reactive")
    assert abs(summary["ettr_difference_points"]) < 1.0
    assert abs(summary["stall_difference_points"]) < 0.2
    assert summary["inside_run_interval"] >= 2


def test_a_tenth_of_the_tier_stalls_as_planned_and_the_plans_fix_brings_it_back(acme):
    spec, cluster = acme
    cfg = runner.RunConfig(seed=1, days=3.0, policy="reactive")
    cut = study.simulate(spec, cluster, cfg, Overrides(parallel_fs_tb=80.0))
    c = cut["comparison"]
    assert c["measured_checkpoint_stall_share"] == pytest.approx(c["planned_checkpoint_stall_share"], rel=0.2)
    fix = study.cheapest_change(cut)
    assert fix is not None
    fixed = study.simulate(spec, cluster, cfg, fix)
    target = fixed["plan"]["target"]["max_checkpoint_overhead"]
    assert fixed["measured"]["checkpoint_stall_share"] < target < c["measured_checkpoint_stall_share"]


@pytest.mark.slow
def test_twenty_seeds_meet_the_plan_under_proactive_health(acme):
    """The issue's acceptance over 20 seeds (the bench prints the same for both policies)."""
    spec, cluster = acme
    summary = study.over_seeds(spec, cluster, list(range(20)), days=30.0, policy="proactive")
    assert abs(summary["ettr_difference_points"]) < 1.0
    assert summary["inside_run_interval"] == 20
    assert abs(summary["stall_difference_points"]) < 0.2


def test_a_dataset_the_tier_cannot_feed_stalls_the_steps(acme):
    import dataclasses

    spec, cluster = acme
    job = job_from(spec, storage_plane_gb_s=1200.0)
    # 1,500 GB/s of random reads against 1,200 GB/s of tier reads (x 0.8 for random, x 0.92, less neighbours)
    hungry = dataclasses.replace(job, read_bytes_per_s=1500e9)
    cfg = runner.RunConfig(seed=0, days=0.5, policy="reactive", failure_rate=QUIET)
    fed, starved = measure.figures(runner.run(job, cluster, cfg)), measure.figures(runner.run(hungry, cluster, cfg))
    assert fed["data_stall_share"] == 0.0
    assert 0.35 < starved["data_stall_share"] < 0.5
    assert starved["ettr"] == pytest.approx(fed["ettr"] - starved["data_stall_share"], abs=0.01)
