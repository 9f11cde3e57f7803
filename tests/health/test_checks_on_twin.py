"""Quick, deep and acceptance checks on the twin: they tell the truth, and one that cannot run fails."""

from __future__ import annotations

import threading

import pytest

from velyrix import catalog
from velyrix.agent.checks import suites
from velyrix.agent.checks.runner import Check, CheckContext, run_check, run_checks
from velyrix.agent.collectors.base import Collector, NodeSample
from velyrix.agent.collectors.sim import SimCollector, SimProber
from velyrix.fleet.drivers.sim import Fault, SimRegion
from velyrix.health.engine import Engine
from velyrix.health.evidence import Evidence
from velyrix.health.ladder import Action


@pytest.fixture()
def twin():
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 2}, seed=3)
    node = next(iter(region.nodes.values()))
    node.load_pct = 0.0
    region.advance(60.0)
    return region, node


def _ctx(region, node):
    return CheckContext(
        SimCollector(node, region), SimProber(node), catalog.node_type(node.node_type), clock=region.clock.now
    )


def _by_name(results):
    return {r.name: r for r in results}


def test_quick_check_passes_on_a_healthy_node_well_under_60_s(twin):
    results = suites.run_tier("quick", _ctx(*twin))
    assert [r.status for r in results] == ["pass"] * 8
    assert sum(r.duration_s for r in results) < 60.0


@pytest.mark.parametrize(
    ("fault", "failing", "action"),
    [
        (Fault("xid", gpu=3, xid=79), "gpu_state", Action.REBOOT),
        (Fault("ecc_dbe", gpu=1), "ecc", Action.RESET_GPU),
        (Fault("remap_failure", gpu=2), "row_remap", Action.RESET_GPU),
        (Fault("nvlink", gpu=0), "nvlink", Action.DRAIN_NOW),
        (Fault("ib_down", port=4), "ib_ports", Action.DRAIN_NOW),
        (Fault("slow_gpu", gpu=6, factor=0.6), "gemm_short", Action.DRAIN_AFTER_JOB),
    ],
)
def test_quick_check_finds_the_injected_fault(twin, fault, failing, action):
    region, node = twin
    region.inject(node.hostname, fault)
    results = _by_name(suites.run_tier("quick", _ctx(region, node)))
    assert results[failing].status == "fail", results[failing]
    verdict = Engine().evaluate(Evidence.build(node.hostname, region.clock.now(), checks=results.values()))
    assert verdict.action >= action


def test_deep_check_reads_nvme_and_long_tests(twin):
    region, node = twin
    region.inject(node.hostname, Fault("slow_disk", drive=2, factor=0.2))
    results = _by_name(suites.run_tier("deep", _ctx(region, node)))
    assert results["nvme"].status == "fail" and results["gemm_long"].status == "pass"


class _Hanging(Collector):
    name = "hanging"

    def __init__(self):
        self.release = threading.Event()

    def collect(self) -> NodeSample:
        self.release.wait(5.0)
        return NodeSample(hostname="h")


def test_a_check_that_hangs_times_out_and_counts_as_failure(twin):
    region, node = twin
    hang = _Hanging()
    ctx = CheckContext(hang, None, catalog.node_type(node.node_type))
    result = run_check(suites.suite("quick", ctx.node_type)[0], ctx, timeout_s=0.2)
    hang.release.set()
    assert result.status == "timeout" and not result.passed
    verdict = Engine().evaluate(Evidence.build("h", result.t_s + 1, checks=[result]))
    assert verdict.action is Action.DRAIN_NOW and "could not run" in verdict.reasons[0].message


def test_missing_counters_and_missing_prober_are_failures_not_passes(twin):
    region, node = twin

    class NoEcc(SimCollector):
        def collect(self):
            sample = super().collect()
            for g in sample.gpus:
                g.ecc_dbe_volatile = None
            return sample

    ctx = CheckContext(NoEcc(node, region), None, catalog.node_type(node.node_type))
    results = _by_name(suites.run_tier("quick", ctx))
    assert results["ecc"].status == "error" and "did not report" in results["ecc"].detail
    assert results["gemm_short"].status == "error"


def test_suite_budget_spent_fails_the_remaining_checks(twin):
    import time as _t

    slow = Check("slow", "quick", lambda ctx: (_t.sleep(0.3), (True, ""))[1], timeout_s=5.0)
    results = run_checks([slow, slow], _ctx(*twin), budget_s=0.2)
    assert [r.status for r in results] == ["timeout", "timeout"]


def test_deep_check_runs_only_on_idle_nodes_on_schedule():
    sched = suites.DeepCheckSchedule(interval_s=100.0)
    assert not sched.due("n", 0.0, idle=False)
    assert sched.due("n", 0.0, idle=True)
    sched.ran("n", 0.0)
    assert not sched.due("n", 50.0, idle=True) and sched.due("n", 100.0, idle=True)


def test_monitor_runs_deep_check_only_when_idle_and_due_and_drains_on_failure(twin):
    from velyrix.agent.checks.monitor import HealthMonitor
    from velyrix.health.drains import InMemorySeam

    region, node = twin
    seam = InMemorySeam(clock=region.clock.now)
    mon = HealthMonitor(
        node.hostname,
        SimCollector(node, region),
        seam,
        clock=region.clock.now,
        deep_schedule=suites.DeepCheckSchedule(interval_s=3600.0),
    )
    ctx = _ctx(region, node)
    assert mon.maybe_deep(ctx, idle=False) is None
    region.inject(node.hostname, Fault("slow_gpu", gpu=5, factor=0.5))
    verdict = mon.maybe_deep(ctx, idle=True)
    assert verdict is not None and verdict.action >= Action.DRAIN_AFTER_JOB
    assert seam.holders(node.hostname)["health"].startswith("velyrix:health: DRAIN_AFTER_JOB")
    assert mon.maybe_deep(ctx, idle=True) is None  # not due again within the interval
