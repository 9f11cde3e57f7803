"""The closed-form expected ETTR (``goodput_expected``) is the mean the seeded simulation converges to."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from velyrix.planners import goodput as gp
from velyrix.planners import goodput_expected as ge

CASES = [  # (interval, save, restart, MTTI, horizon, planned share, planned restart): seconds
    (1800.0, 14.8, 425.9, 207_692.3, 30 * 86400.0, 0.0, None),  # examples/acme-405b.tf
    (1800.0, 14.8, 425.9, 207_692.3, 30 * 86400.0, 0.32, 125.9),  # the same with proactive health
    (1800.0, 30.0, 600.0, 36_000.0, 30 * 86400.0, 0.0, None),  # failures every 10 h
    (3000.0, 200.0, 1000.0, 20_000.0, 5 * 86400.0, 0.5, 100.0),  # the first-order formula is 7 points off
    (6000.0, 60.0, 2000.0, 3_000.0, 2 * 86400.0, 0.0, None),  # restarts longer than a save cycle fails
    (1800.0, 20.0, 600.0, 50_000.0, 30 * 86400.0, 1.0, 0.0),  # every interruption drained, free restarts
]


@pytest.mark.parametrize(("t", "d", "r", "m", "h", "p", "rp"), CASES)
def test_the_closed_form_is_inside_a_large_simulations_interval(t, d, r, m, h, p, rp) -> None:
    expected = ge.expected_ettr(t, d, r, m, horizon_s=h, planned_share=p, planned_restart_s=rp)
    sims = [
        gp.simulate_ettr(t, d, r, m, horizon_s=h, replicas=50_000, seed=s, planned_share=p, planned_restart_s=rp)
        for s in (11, 12, 13, 14)
    ]
    mean = sum(s.ettr_mean for s in sims) / len(sims)
    stderr = math.sqrt(sum(s.ettr_std**2 for s in sims) / len(sims) / (50_000 * len(sims)))
    assert abs(expected - mean) < 3.29 * stderr  # 99.9%: seeded, so this is the same every run


def test_without_failures_the_run_keeps_all_its_compute_but_the_saves() -> None:
    t, d, h = 1800.0, 20.0, 30 * 86400.0
    cycles = math.floor(h / (t + d))
    no_failure = (cycles * t + min(h - cycles * (t + d), t)) / h
    assert ge.expected_ettr(t, d, 300.0, 1e15, horizon_s=h) == pytest.approx(no_failure, rel=1e-9)
    assert ge.expected_ettr(t, d, 300.0, 1e12, horizon_s=h, planned_share=0.5) == pytest.approx(no_failure, rel=1e-5)


def test_rare_failures_cost_what_one_failure_costs() -> None:
    """With an MTTI of a millennium the expected loss is, to first order, the failure rate times the loss of a
    run with one failure at a uniform time: what it had computed since its last save, its restart, and the
    shift of the cycles against the horizon (integrated numerically here, independently of the closed form)."""
    t, d, r, m, h = 1800.0, 20.0, 600.0, 3e10, 30 * 86400.0
    c = t + d

    def w(y: float) -> float:
        if y <= 0.0:
            return 0.0
        n = math.floor(y / c)
        return n * t + min(y - n * c, t)

    steps = 200_000
    one_failure = sum(
        w(h) - math.floor(f / c) * t - w(h - f - r) for f in ((i + 0.5) * h / steps for i in range(steps))
    )
    loss_per_failure = one_failure / steps
    lost = ge.expected_ettr(t, d, r, 1e18, horizon_s=h) - ge.expected_ettr(t, d, r, m, horizon_s=h)
    assert lost * h / (h / m) == pytest.approx(loss_per_failure, rel=1e-3)
    assert loss_per_failure == pytest.approx(t / c * (r + t / 2 + d), rel=0.02)  # the formula's R + T/2, and the save


def test_failures_faster_than_the_restart_leave_nothing() -> None:
    assert ge.expected_ettr(1800.0, 20.0, 3600.0, 60.0, horizon_s=86400.0) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("n", [2, 31, 32, 33, 500, 5000])
def test_the_cycle_sums_agree_with_their_series(n: int) -> None:
    for lam in (1e-9, 1e-6, 1e-4, 1e-2):
        cyc = ge._Cycles(
            lam=lam,
            t=1800.0,
            c=1820.0,
            q=math.exp(-lam * 1820.0),
            one_minus_q=-math.expm1(-lam * 1820.0),
            phase_share=0.0,
        )
        assert cyc.z1(n) == pytest.approx(ge._z1_series(cyc.q, n), rel=1e-9)
        assert cyc.z0(n) == pytest.approx(sum(cyc.q**j for j in range(n)), rel=1e-9)


def test_the_closed_form_needs_no_numpy() -> None:
    code = (
        "import sys\nfrom velyrix.planners import goodput\n"
        "goodput.plan_goodput(gpus=512, save_s=15.0, restart_s=420.0, interval_s=1800.0, simulate=False)\n"
        "print('numpy' in sys.modules)"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
        == "False"
    )


def test_the_plan_says_which_method_gave_its_figures() -> None:
    kw = {"gpus": 512, "save_s": 15.0, "restart_s": 426.0, "interval_s": 1800.0, "replicas": 500}
    closed = gp.plan_goodput(**kw, simulate=False).to_dict()
    simulated = gp.plan_goodput(**kw).to_dict()
    assert (closed["ettr_method"], simulated["ettr_method"]) == ("closed form", "monte carlo")
    assert closed["ettr_simulated"] is None and closed["simulation"] is None and closed["ettr_run_interval"] is None
    assert closed["proactive"]["ettr_simulated"] is None
    assert closed["ettr_expected"] == simulated["ettr_expected"]
    lo, hi = simulated["ettr_simulated_ci"]
    assert lo <= closed["ettr_expected"] <= hi
    same = {
        k: v
        for k, v in closed.items()
        if k
        not in ("ettr_simulated", "ettr_simulated_ci", "simulation", "ettr_run_interval", "ettr_method", "proactive")
    }
    assert same == {k: simulated[k] for k in same}
