"""The check suites: quick (between jobs, < 60 s), deep (idle nodes only, on a schedule), acceptance.

Thresholds come from ``health_thresholds.toml`` (the same rows the engine uses) and the node type of the
catalog; a field the hardware did not report makes the check unable to run, which is a failure.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from velyrix import errors
from velyrix.agent.checks.runner import Check, CheckContext, run_checks
from velyrix.catalog import health as catalog_health
from velyrix.health import evidence as ev

TIERS = ("quick", "deep", "acceptance")


def _all_gpus(ctx: CheckContext):  # -> list[GPUReading]
    sample = ctx.sample()
    if not sample.up:
        raise errors.InvalidInputError(f"node {sample.hostname} cannot be read: {'; '.join(sample.problems)}")
    return sample.gpus


def _gpus(ctx: CheckContext):
    # GPUs that answer: one that fell off the bus fails gpu_state, not every other check as "could not run"
    return [g for g in _all_gpus(ctx) if g.responsive]


def _field(gpu, name: str):  # raise when the device did not report it: the check cannot run
    value = getattr(gpu, name, None)
    if value is None:
        raise errors.InvalidInputError(f"gpu{gpu.index} did not report {name}")
    return value


def gpu_count(ctx: CheckContext) -> tuple[bool, str]:
    n, want = len(_all_gpus(ctx)), ctx.node_type.gpus_per_node
    return n == want, f"{n} of {want} GPUs visible"


def gpu_state(ctx: CheckContext) -> tuple[bool, str]:
    bad = [g.index for g in _all_gpus(ctx) if not g.responsive]
    return not bad, f"GPUs not responding: {bad}" if bad else "all GPUs respond"


def ecc(ctx: CheckContext) -> tuple[bool, str]:
    bad = [f"gpu{g.index} dbe={_field(g, 'ecc_dbe_volatile')}" for g in _gpus(ctx) if _field(g, "ecc_dbe_volatile") > 0]
    return not bad, "; ".join(bad) or "no uncorrectable ECC errors since reset"


def row_remap(ctx: CheckContext) -> tuple[bool, str]:
    bad = []
    for g in _gpus(ctx):
        if _field(g, "remap_failure"):
            bad.append(f"gpu{g.index} remap failure (RMA criterion)")
        elif _field(g, "remap_pending"):
            bad.append(f"gpu{g.index} remap pending (reset applies it)")
    return not bad, "; ".join(bad) or "no remap pending or failed"


def nvlink(ctx: CheckContext) -> tuple[bool, str]:
    want = int(catalog_health.health_thresholds().gpu["nvlinks_per_gpu"])
    bad = [
        f"gpu{g.index} {_field(g, 'nvlink_links_up')}/{want} links"
        for g in _gpus(ctx)
        if _field(g, "nvlink_links_up") < want
    ]
    return not bad, "; ".join(bad) or f"all {want} NVLinks up on every GPU"


def ib_ports(ctx: CheckContext) -> tuple[bool, str]:
    ports = ctx.sample().ib_ports
    want = ctx.node_type.compute_nics
    down = [f"{p.device}/{p.port} {p.state}" for p in ports if p.state != "ACTIVE"]
    ok = not down and len(ports) >= want
    return ok, "; ".join(down) or f"{len(ports)} of {want} compute ports ACTIVE"


def _active(metric: str, spec: float, frac_key: str, seconds: Callable[[CheckContext], float]):
    def run(ctx: CheckContext) -> tuple[bool, str]:
        prober = ctx.need_prober()
        frac = float(catalog_health.health_thresholds().checks[frac_key])
        peer = float(catalog_health.health_thresholds().peer["min_fraction_of_median"])
        kind = "gemm" if metric == "gemm" else "mem"
        results = {g.index: prober.probe(kind, g.index, seconds(ctx)) for g in _gpus(ctx)}
        values = {i: r.value for i, r in results.items() if r.value is not None}
        unit = "TFLOPS" if metric == "gemm" else "GB/s"
        floor = frac * spec
        median = statistics.median(values.values()) if values else 0.0
        bad = [f"gpu{i}: {r.detail or 'failed'}" for i, r in results.items() if r.passed is False]
        for i, r in results.items():
            if r.value is None and r.passed is None:
                raise errors.InvalidInputError(f"gpu{i}: the prober reported neither a figure nor a verdict")
            if r.value is not None and ((r.vs_spec and r.value < floor) or r.value < peer * median):
                bad.append(f"gpu{i} {r.value:.4g} {unit}")
        limits = f"floor {floor:.4g} {unit}, " if any(r.vs_spec for r in results.values()) else ""
        limits += f"{peer:.0%} of the node median {median:.4g}" if values else "no figures reported"
        if bad:
            return False, f"{'; '.join(bad)} ({limits})"
        ran = next((r.detail for r in results.values() if r.detail), "")
        shown = f"min {min(values.values()):.4g} {unit} ({limits})" if values else limits
        return True, f"{shown}; {ran}" if ran else shown

    return run


def nvme(ctx: CheckContext) -> tuple[bool, str]:
    drives = ctx.sample().nvme
    if not drives:
        raise errors.InvalidInputError("no NVMe drives reported")
    per_drive = ctx.node_type.local_nvme_read_gb_s / len(drives)
    bad = [f"{d.name} media_errors={d.media_errors}" for d in drives if (d.media_errors or 0) > 0]
    bad += [
        f"{d.name} read {d.read_gb_s_measured:.1f} GB/s"
        for d in drives
        if d.read_gb_s_measured is not None and d.read_gb_s_measured < 0.5 * per_drive
    ]
    return not bad, "; ".join(bad) or f"{len(drives)} drives healthy"


def suite(tier: str, node_type) -> list[Check]:
    """The checks of ``tier`` (quick, deep, acceptance) for ``node_type`` (a catalog NodeType)."""
    if tier not in TIERS:
        raise errors.UnknownNameError("check tier", tier, TIERS)
    spec_tflops, spec_hbm = node_type.bf16_dense_tflops, node_type.hbm_bandwidth_gb_s
    quick = [
        Check("gpu_count", tier, gpu_count, "DRAIN_NOW", "fatal", 10.0),
        Check("gpu_state", tier, gpu_state, "REBOOT", "fatal", 10.0),
        Check("ecc", tier, ecc, "RESET_GPU", "fatal", 10.0),
        Check("row_remap", tier, row_remap, "RESET_GPU", "degraded", 10.0),
        Check("nvlink", tier, nvlink, "DRAIN_NOW", "fatal", 10.0),
        Check("ib_ports", tier, ib_ports, "DRAIN_NOW", "fatal", 10.0),
        Check(
            "gemm_short",
            tier,
            _active("gemm", spec_tflops, "gemm_min_fraction_of_spec", lambda c: c.short_test_s),
            "DRAIN_AFTER_JOB",
            "degraded",
            25.0,
        ),
        Check(
            "memtest_short",
            tier,
            _active("mem", spec_hbm, "hbm_min_fraction_of_spec", lambda c: c.short_test_s),
            "DRAIN_AFTER_JOB",
            "degraded",
            25.0,
        ),
    ]
    if tier == "quick":
        return quick
    deep = [
        Check(
            "gemm_long",
            tier,
            _active("gemm", spec_tflops, "gemm_min_fraction_of_spec", lambda c: 60.0),
            "DRAIN_AFTER_JOB",
            "degraded",
            600.0,
        ),
        Check(
            "memtest_long",
            tier,
            _active("mem", spec_hbm, "hbm_min_fraction_of_spec", lambda c: 60.0),
            "DRAIN_AFTER_JOB",
            "degraded",
            600.0,
        ),
        Check("nvme", tier, nvme, "DRAIN_AFTER_JOB", "degraded", 120.0),
    ]
    return quick + deep


ACTIVE_CHECKS = {
    "quick": ("gemm_short", "memtest_short"),
    "deep": ("gemm_short", "memtest_short", "gemm_long", "memtest_long"),
}
ACTIVE_CHECKS["acceptance"] = ACTIVE_CHECKS["deep"]


def skipped_active(
    tier: str, t_s: float, reason: str = "skipped by configuration (--prober none)"
) -> list[ev.CheckResult]:
    """Results recording the active tests of ``tier`` as skipped by configuration at ``t_s`` (level warn,
    action IGNORE): what the agent feeds its verdict when the operator chose ``--prober none``."""
    return [
        ev.CheckResult(name, "skipped", t_s, action="IGNORE", level="warn", detail=reason)
        for name in ACTIVE_CHECKS[tier]
    ]


def run_tier(tier: str, ctx: CheckContext) -> list[ev.CheckResult]:
    """Run the suite of ``tier`` under its budget (quick 60 s, deep and acceptance from the thresholds)."""
    budgets = catalog_health.health_thresholds().checks
    budget = float(budgets[f"{tier}_timeout_s"])
    return run_checks(suite(tier, ctx.node_type), ctx, budget)


class DeepCheckSchedule:
    """When to run the deep check: every ``interval_s`` per node, and only while the node is idle."""

    def __init__(self, interval_s: float = 7 * 86400.0) -> None:
        self.interval_s = interval_s
        self._last: dict[str, float] = {}

    def due(self, node: str, now_s: float, idle: bool) -> bool:
        """True when ``node`` is idle and its last deep check is older than the interval."""
        return idle and now_s - self._last.get(node, float("-inf")) >= self.interval_s

    def ran(self, node: str, now_s: float) -> None:
        self._last[node] = now_s
