"""Counter thresholds, trends over windows, peer outliers, checks, lemons and policy overrides."""

from __future__ import annotations

import pytest

from velyrix import errors
from velyrix.health import evidence as ev
from velyrix.health.engine import Engine
from velyrix.health.ladder import Action, Level
from velyrix.health.policy import Policy

H = 3600.0


def _sample(t, **gpu0):
    gpus = (ev.GpuReading(0, **gpu0),) + tuple(ev.GpuReading(i) for i in range(1, 8))
    return ev.CounterSample(t, gpus=gpus)


def _verdict(samples, **kw):
    return Engine(**kw).evaluate(ev.Evidence.build("n1", samples[-1].t_s, samples=samples))


def test_healthy_node_is_ok():
    v = _verdict([_sample(0.0), _sample(60.0)])
    assert (v.level, v.action, v.reasons) == (Level.OK, Action.IGNORE, ())


@pytest.mark.parametrize(
    ("fields", "key", "action"),
    [
        ({"ecc_dbe_volatile": 1}, "ecc_dbe_volatile:gpu0", Action.RESET_GPU),
        ({"remap_pending": 1}, "remap_pending:gpu0", Action.RESET_GPU),
        ({"remap_failure": 1}, "remap_failure:gpu0", Action.QUARANTINE),
        ({"remap_bank_max": 6}, "remap_bank_near_limit:gpu0", Action.DRAIN_AFTER_JOB),
        ({"remap_bank_max": 8}, "remap_bank_full:gpu0", Action.DRAIN_NOW),
        (
            {"remapped_rows_correctable": 300, "remapped_rows_uncorrectable": 212},
            "remapped_rows_total:gpu0",
            Action.QUARANTINE,
        ),
        ({"sram_uncorrectable": 3}, "sram_uncorrectable_rma:gpu0", Action.QUARANTINE),
        ({"retired_pages": 11}, "retired_pages:gpu0", Action.DRAIN_AFTER_JOB),
        ({"temperature_c": 90.0}, "gpu_slowdown_temp:gpu0", Action.DRAIN_AFTER_JOB),
        ({"throttle_reasons": 0x40}, "hw_slowdown:gpu0", Action.DRAIN_AFTER_JOB),
        ({"nvlink_links_up": 17}, "nvlink_down:gpu0", Action.DRAIN_NOW),
        ({"responsive": False}, "gpu_unresponsive:gpu0", Action.REBOOT),
    ],
)
def test_counter_threshold_gives_action(fields, key, action):
    v = _verdict([_sample(0.0, **fields)])
    assert v.reason(key) is not None and v.reason(key).action is action
    assert v.action is action


def test_thresholds_are_strict_at_the_boundary():
    assert _verdict([_sample(0.0, retired_pages=10)]).action is Action.IGNORE
    assert _verdict([_sample(0.0, remap_bank_max=5)]).action is Action.IGNORE


def test_ib_port_down_drains_now():
    port = ev.IbPortReading("mlx5_0", 1, state="DOWN", counters={})
    v = Engine().evaluate(ev.Evidence.build("n", 1.0, samples=[ev.CounterSample(1.0, ib_ports=(port,))]))
    assert v.action is Action.DRAIN_NOW and v.level is Level.FATAL


def test_rising_single_bit_rate_is_a_precursor_but_a_steady_rate_is_not():
    rising = [_sample(i * H, ecc_sbe_aggregate=int(5 * i * i)) for i in range(25)]  # accelerating
    steady = [_sample(i * H, ecc_sbe_aggregate=int(40 * i)) for i in range(25)]  # same total, flat rate
    assert _verdict(rising).reason("sbe_rate_rising:gpu0").action is Action.DRAIN_AFTER_JOB
    assert _verdict(steady).reason("sbe_rate_rising:gpu0") is None


def test_a_one_off_burst_is_not_a_rising_trend():
    burst = [_sample(i * H, ecc_sbe_aggregate=0 if i < 20 else 50_000) for i in range(25)]
    assert _verdict(burst).reason("sbe_rate_rising:gpu0") is None
    sustained = burst[:20] + [_sample(i * H, ecc_sbe_aggregate=2000 * (i - 19)) for i in range(20, 25)]
    assert _verdict(sustained).reason("sbe_rate_rising:gpu0").action is Action.DRAIN_AFTER_JOB


def test_a_fix_restarts_trends():
    rising = [_sample(i * H, ecc_sbe_aggregate=int(5 * i * i)) for i in range(25)]
    e = ev.Evidence.build("n1", rising[-1].t_s, samples=rising, repairs=[ev.RepairEvent(22.5 * H, "reboot")])
    assert Engine().evaluate(e).reason("sbe_rate_rising:gpu0") is None


def test_trend_only_counts_inside_its_window():
    old = [_sample(i * H, ecc_sbe_aggregate=int(5 * i * i)) for i in range(25)]
    later = old + [_sample(100 * H, ecc_sbe_aggregate=old[-1].gpus[0].ecc_sbe_aggregate)]
    assert _verdict(later).reason("sbe_rate_rising:gpu0") is None


def test_ib_link_flaps_over_a_day_drain_after_job():
    samples = [
        ev.CounterSample(i * H, ib_ports=(ev.IbPortReading("mlx5_3", 1, counters={"link_downed": i // 2}),))
        for i in range(8)
    ]
    v = Engine().evaluate(ev.Evidence.build("n", samples[-1].t_s, samples=samples))
    assert v.reason("ib_link_flaps:mlx5_3/1").action is Action.DRAIN_AFTER_JOB


def test_gpu_slower_than_its_peers_fails():
    gpus = tuple(ev.GpuReading(i, bf16_tflops_measured=700.0 if i == 5 else 900.0) for i in range(8))
    v = Engine().evaluate(ev.Evidence.build("n", 1.0, samples=[ev.CounterSample(1.0, gpus=gpus)]))
    assert [r.key for r in v.reasons] == ["peer:bf16_tflops_measured:gpu5"]
    assert v.action is Action.DRAIN_AFTER_JOB


def test_peer_baseline_from_other_nodes_catches_a_uniformly_slow_node():
    gpus = tuple(ev.GpuReading(i, hbm_gb_s_measured=3000.0) for i in range(8))
    e = ev.Evidence.build(
        "n", 1.0, samples=[ev.CounterSample(1.0, gpus=gpus)], peers={"hbm_gb_s_measured": [4000.0] * 16}
    )
    assert Engine().evaluate(e).action is Action.DRAIN_AFTER_JOB


def test_check_that_could_not_run_is_a_failure():
    c = ev.CheckResult("gpu_count", "timeout", 5.0, action="DRAIN_NOW", level="fatal", detail="nvidia-smi hung")
    v = Engine().evaluate(ev.Evidence.build("n", 6.0, checks=[c]))
    assert v.action is Action.DRAIN_NOW and "could not run" in v.reasons[0].message


def test_latest_check_result_wins():
    checks = [ev.CheckResult("ecc", "fail", 1.0), ev.CheckResult("ecc", "pass", 2.0)]
    assert Engine().evaluate(ev.Evidence.build("n", 3.0, checks=checks)).action is Action.IGNORE


def test_lemon_score_from_repair_history_quarantines():
    repairs = [ev.RepairEvent(d * 86400.0, "reboot") for d in range(6)]
    v = Engine().evaluate(ev.Evidence.build("n", 7 * 86400.0, repairs=repairs))
    assert v.lemon_score == 6.0 and v.action is Action.QUARANTINE and v.reason("lemon").hardware
    older = Engine().evaluate(ev.Evidence.build("n", 200 * 86400.0, repairs=repairs))
    assert older.lemon_score == 0.0 and older.action is Action.IGNORE


def test_policy_overrides_tune_severity():
    e = ev.Evidence.build("n", 10.0, xids=[ev.XidEvent(5.0, 13, 0)], samples=[_sample(1.0, retired_pages=20)])
    policy = Policy.from_dict({"xid": {"13": {"action": "drain-now", "level": "fatal"}}, "disabled": ["retired_pages"]})
    v = Engine(policy=policy).evaluate(e)
    assert [(r.key, r.action) for r in v.reasons] == [("xid:13:gpu0", Action.DRAIN_NOW)]
    capped = Engine(policy=Policy.from_dict({"max_action": "DRAIN_AFTER_JOB"})).evaluate(
        ev.Evidence.build("n", 1.0, samples=[_sample(0.0, remap_failure=1)])
    )
    assert capped.action is Action.DRAIN_AFTER_JOB


def test_policy_with_unknown_names_suggests_the_closest():
    with pytest.raises(errors.UnknownNameError) as info:
        Policy.from_dict({"rules": {"retired_page": {"action": "IGNORE"}}})
    assert "retired_pages" in (info.value.hint or "")
    with pytest.raises(errors.UnknownNameError):
        Policy.from_dict({"xid": {"48": {"action": "REBOT"}}})
