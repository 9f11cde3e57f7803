"""Goodput: MTTI from failure rates, Young and Daly against hand-worked values, first-order ETTR, and a
Monte Carlo simulation that agrees with the formula when failures are rare (and not when they are not)."""

from __future__ import annotations

import math

import hypothesis
import pytest
from hypothesis import strategies as st

from velyrix import errors
from velyrix.planners import goodput as gp


def test_mtti_of_the_llama3_405b_run() -> None:
    # 16,384 H100 = 2,048 nodes at 3.79 failures per 1,000 node-days (419 in 54 days):
    # 2,048 x 3.79 / 1,000 = 7.762 per day -> 86,400 / 7.762 = 11,131 s = 3.09 h.
    m = gp.job_mtti_s(2048, 3.79)
    assert m == pytest.approx(11131.1, abs=0.5)
    assert 54 * 86400 / m == pytest.approx(419, abs=1)


def test_mtti_of_the_seed_pod_at_the_catalog_default() -> None:
    # 64 nodes at 6.5 (Meta RSC-1): 0.416 per day -> 57.69 h.
    assert gp.job_mtti_s(64, gp.default_failure_rate()) / 3600 == pytest.approx(57.692, abs=0.001)


def test_young_by_hand() -> None:
    # delta = 60 s, M = 1 day: sqrt(2 x 60 x 86,400) = sqrt(10,368,000) = 3,219.94 s
    assert gp.young_interval_s(60, 86400) == pytest.approx(3219.94, abs=0.01)


def test_daly_by_hand() -> None:
    # x = 60 / 172,800 = 3.4722e-4, sqrt(x) = 0.0186339
    # 3,219.94 x (1 + 0.0186339/3 + 3.4722e-4/9) - 60 = 3,219.94 x 1.0062499 - 60 = 3,180.07 s
    assert gp.daly_interval_s(60, 86400) == pytest.approx(3180.07, abs=0.02)
    # delta = 600 s, M = 3 h: x = 600/21,600 = 0.027778, sqrt(x) = 0.166667
    # sqrt(2 x 600 x 10,800) = 3,600; 3,600 x (1 + 0.055556 + 0.0030864) - 600 = 3,211.11 s
    assert gp.daly_interval_s(600, 10800) == pytest.approx(3211.11, abs=0.02)


def test_daly_is_the_mtti_when_the_save_outlasts_two_mtti() -> None:
    assert gp.daly_interval_s(3000, 1000) == 1000


def test_daly_is_shorter_than_young_for_small_saves() -> None:
    assert gp.daly_interval_s(15, 2e5) < gp.young_interval_s(15, 2e5)


def test_first_order_ettr_by_hand() -> None:
    # T = 3,600, delta = 60, R = 600, M = 86,400: 1 - 60/3,660 - 2,400/86,400 = 0.955829
    assert gp.ettr_first_order(3600, 60, 600, 86400) == pytest.approx(0.955829, abs=1e-6)
    assert gp.ettr_first_order(3600, 60, 600, 100) == 0.0  # clamped


def test_simulation_agrees_with_the_formula_when_failures_are_rare() -> None:
    # 8 nodes at 2.34 per 1,000 node-days: M = 53.4 days; a 54-day run sees ~1 failure.
    m = gp.job_mtti_s(8, 2.34)
    t, d, r = 3600.0, 30.0, 600.0
    sim = gp.simulate_ettr(t, d, r, m, horizon_s=54 * 86400, replicas=20000, seed=7)
    formula = gp.ettr_first_order(t, d, r, m)
    lo, hi = sim.ettr_ci
    assert lo <= formula <= hi
    assert hi - lo < 1e-4
    assert sim.failures_mean == pytest.approx(54 * 86400 / m, rel=0.03)


def test_simulation_departs_from_the_first_order_formula_when_failures_are_frequent() -> None:
    # M = 3 h with hour-long intervals: failures during restarts and partial cycles matter.
    t, d, r, m = 3600.0, 60.0, 900.0, 3 * 3600.0
    sim = gp.simulate_ettr(t, d, r, m, horizon_s=30 * 86400, replicas=3000, seed=1)
    formula = gp.ettr_first_order(t, d, r, m)
    assert not sim.ettr_ci[0] <= formula <= sim.ettr_ci[1]
    assert abs(sim.ettr_mean - formula) < 0.05


def test_simulation_without_failures_is_the_save_overhead() -> None:
    sim = gp.simulate_ettr(1000, 10, 100, 1e15, horizon_s=1010 * 100, replicas=10, seed=0)
    assert sim.ettr_mean == pytest.approx(1000 / 1010, abs=1e-9)


def test_simulation_is_seeded() -> None:
    a = gp.simulate_ettr(1800, 20, 400, 40000, horizon_s=5 * 86400, replicas=500, seed=3)
    b = gp.simulate_ettr(1800, 20, 400, 40000, horizon_s=5 * 86400, replicas=500, seed=3)
    c = gp.simulate_ettr(1800, 20, 400, 40000, horizon_s=5 * 86400, replicas=500, seed=4)
    assert a == b and a.ettr_mean != c.ettr_mean


def test_plan_goodput_reports_intervals_ettr_and_lost_value() -> None:
    plan = gp.plan_goodput(gpus=512, save_s=15, restart_s=420, interval_s=1800, replicas=1000)
    assert plan.nodes == 64 and plan.mttf_h == pytest.approx(57.69, abs=0.01)
    assert plan.interval_young_s == pytest.approx(math.sqrt(2 * 15 * plan.mttf_h * 3600))
    assert plan.ettr == pytest.approx(gp.ettr_first_order(1800, 15, 420, plan.mttf_h * 3600))
    assert plan.lost_gpu_hours_per_week == pytest.approx(512 * 168 * (1 - plan.ettr))
    assert plan.lost_usd_per_week == pytest.approx(plan.lost_gpu_hours_per_week * 3.50)
    cases = [row.case for row in plan.sensitivity]
    assert cases == ["baseline", "failure rate x2", "bandwidth at low percentile"]
    doubled = plan.sensitivity[1]
    assert doubled.mtti_h == pytest.approx(plan.mttf_h / 2) and doubled.ettr_at_interval < plan.ettr
    slow = plan.sensitivity[2]
    assert slow.save_s == pytest.approx(15 / 0.8) and slow.ettr_at_interval < plan.ettr
    assert sum(c["share"] for c in plan.causes) < 1.0 and plan.causes[0]["cause"] == "faulty_gpu"
    data = plan.to_dict()
    for key in ("mttf_h", "interval_young_s", "interval_daly_s", "ettr", "ettr_simulated", "ettr_simulated_ci"):
        assert key in data


def test_auto_interval_is_daly() -> None:
    plan = gp.plan_goodput(gpus=64, save_s=20, restart_s=300, replicas=200)
    assert plan.interval_is_auto and plan.interval_s == plan.interval_daly_s


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"gpus": 0, "save_s": 10, "restart_s": 10}, "GPU count"),
        ({"gpus": 8, "save_s": -1, "restart_s": 10}, "save seconds"),
        ({"gpus": 8, "save_s": 10, "restart_s": -5}, "restart seconds"),
        ({"gpus": 8, "save_s": 10, "restart_s": 5, "failure_rate": 0}, "node failure rate"),
        ({"gpus": 8, "save_s": 10, "restart_s": 5, "interval_s": -60}, "checkpoint interval"),
    ],
)
def test_bad_inputs_are_rejected(kwargs: dict, text: str) -> None:
    with pytest.raises(errors.InvalidInputError, match=text):
        gp.plan_goodput(replicas=10, **kwargs)


def test_unknown_node_type_suggests_the_closest() -> None:
    with pytest.raises(errors.UnknownNameError) as info:
        gp.plan_goodput(gpus=8, node_type="hgx-h200", save_s=10, restart_s=10, replicas=10)
    assert "hgx-h200-8g" in (info.value.hint or "")


def test_the_per_run_interval_holds_single_runs_and_is_wider_than_the_mean_ci():
    from velyrix.planners import goodput as gp

    sim = gp.simulate_ettr(1800.0, 15.0, 426.0, 57.7 * 3600.0, horizon_s=30 * 86400.0, replicas=2000, seed=3)
    lo, hi = sim.ettr_run_interval
    assert lo < sim.ettr_ci[0] < sim.ettr_ci[1] < hi
    # fresh single runs (other seeds) land inside it about 99% of the time
    runs = [
        gp.simulate_ettr(1800.0, 15.0, 426.0, 57.7 * 3600.0, horizon_s=30 * 86400.0, replicas=2, seed=s).ettr_mean
        for s in range(100, 140)
    ]
    assert sum(lo <= r <= hi for r in runs) >= 36


def test_caught_interruptions_cost_a_planned_restart_and_no_work():
    from velyrix.planners import goodput as gp

    m, t, d, r, detect = 57.7 * 3600.0, 1800.0, 15.0, 426.0, 120.0
    kw = {"horizon_s": 30 * 86400.0, "replicas": 4000, "seed": 5}
    reactive = gp.simulate_ettr(t, d, r, m, **kw)
    caught = gp.simulate_ettr(t, d, r, m, planned_share=0.32, planned_restart_s=r - detect, **kw)
    all_caught = gp.simulate_ettr(t, d, r, m, planned_share=1.0, planned_restart_s=0.0, **kw)
    assert all_caught.ettr_mean == pytest.approx(t / (t + d), abs=2e-4)  # only the saves cost anything
    assert reactive.ettr_mean < caught.ettr_mean < all_caught.ettr_mean
    formula = gp.ettr_first_order_proactive(t, d, r, m, 0.32, detect)
    assert caught.ettr_mean == pytest.approx(formula, abs=3e-4)
    assert formula - gp.ettr_first_order(t, d, r, m) == pytest.approx((0.32 * detect + 0.32 * t / 2) / m)


def test_the_plan_states_the_proactive_figures_beside_the_reactive_ones():
    from velyrix.planners import goodput as gp

    plan = gp.plan_goodput(gpus=512, save_s=15.0, restart_s=426.0, interval_s=1800.0, replicas=500)
    pro = plan.to_dict()["proactive"]
    assert 0.25 < pro["caught_share"] < 0.40  # the catalog's precursor causes (34%) x the catch share
    assert plan.ettr < pro["ettr"] and pro["ettr_run_interval"][0] < pro["ettr_simulated"] < pro["ettr_run_interval"][1]


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(
    st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), min_size=1, max_size=400),
    st.sampled_from([*gp.RUN_INTERVAL_PCT, 0.0, 50.0, 100.0, 37.3]),
)
def test_percentile_is_numpys_to_the_bit(values: list[float], pct: float) -> None:
    # The plan's per-run interval must not move when numpy.percentile is not called (velyrix plan output).
    import numpy as np

    assert gp.percentile_linear(sorted(values), pct) == float(np.percentile(np.array(values), pct))


def test_simulation_does_not_load_numpy_ma() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from velyrix.planners import goodput as g; "
        "g.simulate_ettr(1800, 30, 600, 36000, horizon_s=86400 * 30, replicas=50); print('numpy.ma' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _full_width_ettr(
    interval: float, save: float, restart: float, mtti: float, horizon: float, seed: int
) -> list[float]:
    """The simulation computed over every drawn segment (no truncation): the oracle for ``simulate_ettr``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    expected = horizon / mtti
    k = int(expected + 6.0 * math.sqrt(expected) + 16)
    gaps = rng.exponential(mtti, size=(300, k))
    ends = np.cumsum(gaps, axis=1)
    assert ends[:, -1].min() >= horizon
    starts = ends - gaps
    run = np.clip(np.minimum(gaps, horizon - starts), 0.0, None)
    run[:, 1:] = np.clip(run[:, 1:] - restart, 0.0, None)
    cycles = np.floor(run / (interval + save))
    partial = np.where(ends > horizon, np.minimum(run - cycles * (interval + save), interval), 0.0)
    return sorted(((cycles * interval + partial).sum(axis=1) / horizon).tolist())


@pytest.mark.parametrize(
    ("interval", "save", "restart", "mtti"),
    [(1800.0, 30.0, 600.0, 11131.0), (300.0, 5.0, 0.0, 3600.0), (14000.0, 400.0, 2000.0, 9e5), (60.0, 0.0, 60.0, 2e6)],
)
def test_segments_after_the_horizon_are_not_computed_and_change_nothing(
    interval: float, save: float, restart: float, mtti: float
) -> None:
    horizon = 30 * 86400.0
    sim = gp.simulate_ettr(interval, save, restart, mtti, horizon_s=horizon, replicas=300, seed=7)
    oracle = _full_width_ettr(interval, save, restart, mtti, horizon, seed=7)
    assert math.isclose(sim.ettr_mean, sum(oracle) / len(oracle), rel_tol=1e-12)
    assert sim.ettr_run_interval == (
        gp.percentile_linear(oracle, gp.RUN_INTERVAL_PCT[0]),
        gp.percentile_linear(oracle, gp.RUN_INTERVAL_PCT[1]),
    )
