"""Property tests: random evidence sequences never crash the engine and never skip a rung.

"Skipping a rung" is defined as: when an XID recurs on the same GPU, the action for that XID (its
reason's rung) may rise by at most ONE rung over its action at the previous occurrence, and it rises
only if a fix (GPU reset, reboot) came between the two; its first occurrence starts at its base rung
(catalog or policy). Escalation never passes QUARANTINE: RMA comes only from an RMA criterion. And the
verdict's action after appending a recurrence is at most max(verdict before, that XID's previous rung + 1).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from velyrix.catalog import health as catalog_health
from velyrix.health import evidence as ev
from velyrix.health.engine import Engine
from velyrix.health.ladder import ESCALATION_CAP, Action, Level

CODES = catalog_health.xid_codes() + [999]
ENGINE = Engine()

gpu_reading = st.builds(
    ev.GpuReading,
    index=st.integers(0, 7),
    temperature_c=st.floats(-10, 130, allow_nan=False),
    ecc_sbe_aggregate=st.integers(0, 2**40),
    ecc_dbe_volatile=st.integers(0, 3),
    remapped_rows_uncorrectable=st.integers(0, 600),
    remap_pending=st.integers(0, 1),
    remap_failure=st.integers(0, 1),
    remap_bank_max=st.integers(0, 9),
    sram_uncorrectable=st.integers(0, 5),
    retired_pages=st.integers(0, 20),
    nvlink_links_up=st.integers(0, 18),
    throttle_reasons=st.integers(0, 2**16),
    bf16_tflops_measured=st.none() | st.floats(0, 1000, allow_nan=False),
    responsive=st.booleans(),
)
step = st.one_of(
    st.tuples(
        st.just("xid"),
        st.sampled_from(CODES),
        st.sampled_from([0, 1, None]),
        st.sampled_from([None, "NONE", "GPU_RESET", "NODE_REBOOT", "DRAIN_P2P", "DRAIN_AND_RESET", "bogus"]),
    ),
    st.tuples(st.just("repair"), st.sampled_from(ev.REPAIR_KINDS), st.sampled_from([0, 1, None])),
    st.tuples(
        st.just("sample"),
        st.lists(gpu_reading, max_size=3),
        st.sampled_from(["ACTIVE", "DOWN", "INIT"]),
        st.integers(0, 50),
    ),
    st.tuples(
        st.just("check"),
        st.sampled_from(["quick", "gemm"]),
        st.sampled_from(ev.CHECK_STATUSES),
        st.sampled_from(["DRAIN_AFTER_JOB", "DRAIN_NOW"]),
    ),
)
sequence = st.lists(st.tuples(st.floats(1.0, 20 * 86400.0, allow_nan=False), step), min_size=1, max_size=25)


def _apply(kind_step, t, acc):
    kind = kind_step[0]
    if kind == "xid":
        acc["xids"].append(ev.XidEvent(t, kind_step[1], kind_step[2], kind_step[3]))
    elif kind == "repair":
        acc["repairs"].append(ev.RepairEvent(t, kind_step[1], kind_step[2]))
    elif kind == "sample":
        port = ev.IbPortReading("mlx5_0", 1, kind_step[2], counters={"link_downed": kind_step[3]})
        acc["samples"].append(ev.CounterSample(t, gpus=tuple(kind_step[1]), ib_ports=(port,)))
    else:
        acc["checks"].append(ev.CheckResult(kind_step[1], kind_step[2], t, action=kind_step[3]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequence)
def test_random_evidence_never_crashes_and_never_skips_a_rung(seq):
    acc = {"xids": [], "repairs": [], "samples": [], "checks": []}
    t = 0.0
    last_rung: dict[str, Action] = {}  # xid key -> its action at its latest occurrence
    prev_verdict_action = Action.IGNORE
    for dt, s in seq:
        t += dt
        _apply(s, t, acc)
        verdict = ENGINE.evaluate(ev.Evidence.build("n", t, **acc))
        # Consistency: the verdict is the maximum of its reasons, and no action comes from nowhere.
        assert verdict.action == max((r.action for r in verdict.reasons), default=Action.IGNORE)
        assert verdict.level == max((r.level for r in verdict.reasons), default=Level.OK)
        assert isinstance(verdict.to_dict()["action"], str)
        if s[0] == "xid":
            code, gpu = s[1], s[2]
            key = f"xid:{code}:gpu{gpu if gpu is not None else '?'}"
            reason = verdict.reason(key)
            assert reason is not None, "a fresh XID is always current evidence"
            info = catalog_health.xid(code) if code != 999 else None
            if info is not None and info.escalates:
                base = Action.parse(info.action)
                assert reason.action >= base
                assert reason.action <= max(base, ESCALATION_CAP)
                if key in last_rung:
                    assert reason.action <= last_rung[key].up(1, cap=max(base, ESCALATION_CAP)), "skipped a rung"
                    assert verdict.action <= max(prev_verdict_action, last_rung[key].up(1))
                else:
                    assert reason.action == base, "first occurrence starts at its base rung"
            last_rung[key] = reason.action
        prev_verdict_action = verdict.action


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.sampled_from([c for c in catalog_health.xid_codes() if catalog_health.xid(c).escalates]))
def test_each_fixed_recurrence_climbs_exactly_one_rung(n, code):
    base = Action.parse(catalog_health.xid(code).action)
    xids = [ev.XidEvent(1000.0 * i, code, 0) for i in range(n)]
    fixes = [ev.RepairEvent(1000.0 * i + 500.0, "reboot") for i in range(n - 1)]
    rungs = [
        ENGINE.evaluate(ev.Evidence.build("n", 1000.0 * i + 1, xids=xids[: i + 1], repairs=fixes[:i]))
        .reason(f"xid:{code}:gpu0")
        .action
        for i in range(n)
    ]
    assert rungs == [base.up(i, cap=max(base, ESCALATION_CAP)) for i in range(n)]
