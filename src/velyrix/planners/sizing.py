"""Sizing: what one storage configuration costs a job, and the search for the cheapest that meets target.

A configuration is (tier capacity, sync or async saves, checkpoint interval). For each we compute the
seconds a save blocks training, its share of the interval and of a step, the async drain and host-RAM
checks, the restart cost (detect + reschedule + reload at the tier's low-percentile read bandwidth),
the first-order ETTR, retention capacity per tier (K checkpoints on the performance tier, every Nth
promoted to object storage, archived after D days) and the monthly price, next to the value of the
GPU-hours that failures and saves cost. Pure functions over catalog data.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from velyrix import catalog, units
from velyrix.planners import checkpoints, goodput, tiers

DAYS_PER_MONTH = units.HOURS_PER_MONTH / 24.0
INTERVAL_LADDER_S = (600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0, 5400.0, 7200.0)
"""Intervals the search tries besides the declared one and Daly's optimum."""
CAPACITY_STEP_TB = 50.0


@dataclass(frozen=True)
class Context:
    """Everything about the job that does not change between configurations."""

    ckpt: checkpoints.CheckpointSize
    node_type: str
    nodes: int
    gpus: int
    mtti_s: float
    step_time_s: float | None
    max_overhead: float
    goodput_target: float | None
    keep: int
    promote_every: int
    archive_after_days: float | None
    dataset_perf_tb: float
    feed_read_gb_s: float = 0.0
    """Read GB/s the data feed needs from this tier (0 when the dataset lives elsewhere)."""
    feed_read_factor: float = 1.0
    """Share of the tier's read bandwidth the feed's pattern gets (random reads are derated)."""


def replace_dataset(ctx: Context, dataset_tb: float, read_gb_s: float = 0.0, read_factor: float = 1.0) -> Context:
    """``ctx`` with the dataset on the performance tier, needing ``read_gb_s`` at ``read_factor``."""
    return dataclasses.replace(ctx, dataset_perf_tb=dataset_tb, feed_read_gb_s=read_gb_s, feed_read_factor=read_factor)


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


@dataclass(frozen=True)
class Retention:
    """Capacity per tier for the checkpoints a policy keeps, and its monthly price."""

    keep_on_perf: int
    promote_every: int
    archive_after_days: float | None
    perf_tb: float
    """(K + 1) checkpoints (K kept + the one being written) plus a dataset placed there."""
    promoted_per_day: float
    object_tb: float
    """Steady state with archiving; one month of promotions without it."""
    archive_tb_per_month: float
    object_usd_per_month: float
    archive_usd_per_month: float
    """First month; archive grows by ``archive_tb_per_month`` every month."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def retention(ctx: Context, cycle_s: float) -> Retention:
    """Retention capacity for one save every ``cycle_s`` wall seconds."""
    size_tb = ctx.ckpt.size_bytes / units.TB
    per_day = units.SECONDS_PER_DAY / cycle_s / ctx.promote_every if math.isfinite(cycle_s) else 0.0
    if ctx.archive_after_days is not None:
        object_tb = size_tb * per_day * ctx.archive_after_days
        archive_tb = size_tb * per_day * DAYS_PER_MONTH
    else:
        object_tb, archive_tb = size_tb * per_day * DAYS_PER_MONTH, 0.0
    return Retention(
        keep_on_perf=ctx.keep,
        promote_every=ctx.promote_every,
        archive_after_days=ctx.archive_after_days,
        perf_tb=(ctx.keep + 1) * size_tb + ctx.dataset_perf_tb,
        promoted_per_day=per_day,
        object_tb=object_tb,
        archive_tb_per_month=archive_tb,
        object_usd_per_month=object_tb * catalog.storage_tier("object").price_usd_per_tb_month,
        archive_usd_per_month=archive_tb * catalog.storage_tier("archive").price_usd_per_tb_month,
    )


@dataclass(frozen=True)
class Option:
    """One configuration and what it costs the job."""

    tier: str
    capacity_tb: float
    mode: str
    interval_s: float
    interval_auto: bool
    write_gb_s: float
    """Low-percentile write GB/s of the tier for this job (what the planner sizes with)."""
    expected_write_gb_s: float
    read_gb_s: float
    write_s: float
    """Seconds to write one checkpoint to the tier (aggregate or busiest node, whichever is slower)."""
    blocking_s: float
    staging_s: float | None
    drain_ok: bool
    host_ram_needed_gb: float
    host_ram_free_gb: float
    host_ram_ok: bool
    share_of_interval: float
    blocking_steps: float | None
    """Steps' worth of time one save blocks (blocking / step time), when the step time is known."""
    restart_s: float
    ettr: float
    capacity_ok: bool
    meets: bool
    reasons: tuple[str, ...]
    retention: Retention
    perf_usd_per_month: float
    storage_usd_per_month: float
    lost_gpu_hours_per_month: float
    lost_usd_per_month: float

    @property
    def total_usd_per_month(self) -> float:
        return self.storage_usd_per_month + self.lost_usd_per_month

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        for key in ("write_s", "blocking_s", "share_of_interval", "restart_s", "interval_s"):
            out[key] = _finite(out[key])
        out["reasons"] = list(self.reasons)
        out["total_usd_per_month"] = self.total_usd_per_month
        return out


def evaluate(ctx: Context, tier_name: str, capacity_tb: float, mode: str, interval_s: float | None) -> Option:
    """Cost of saving ``ctx.ckpt`` to ``tier_name`` at ``capacity_tb`` in ``mode`` every ``interval_s``
    seconds (``None``: Daly's optimum for this configuration's blocking time)."""
    cfg = catalog.load_toml("checkpointing.toml")
    node = catalog.node_type(ctx.node_type)
    perf = tiers.tier_performance(tier_name, capacity_tb, nodes=ctx.nodes, node_type=ctx.node_type)
    size_gb, node_gb = ctx.ckpt.size_bytes / units.GB, ctx.ckpt.per_node_bytes / units.GB
    node_p10 = node.storage_gb_s * perf.p10_derate

    def transfer_s(agg_gb_s: float) -> float:
        return max(size_gb / agg_gb_s, node_gb / node_p10) if agg_gb_s > 0 else math.inf

    write_s, reload_s = transfer_s(perf.p10_write_gb_s), transfer_s(perf.p10_read_gb_s)
    host_free = node.host_ram_gb * float(cfg["staging"]["host_ram_fraction"])
    staging = None
    if mode == "async":
        staging = ctx.ckpt.per_rank_bytes / units.GB / float(cfg["staging"]["d2h_gb_s_per_gpu"]) + float(
            cfg["staging"]["async_fixed_s"]
        )
        blocking = staging
    else:
        blocking = write_s
    auto = interval_s is None
    if interval_s is None:
        interval_s = goodput.daly_interval_s(blocking, ctx.mtti_s) if math.isfinite(blocking) else math.inf
        if mode == "async":
            interval_s = max(interval_s, write_s)  # the drain must finish before the next save
    drain_ok = mode == "sync" or write_s <= interval_s
    ram_ok = mode == "sync" or node_gb <= host_free
    restart = float(cfg["restart"]["detect_s"]) + float(cfg["restart"]["reschedule_s"]) + reload_s
    if math.isfinite(blocking) and math.isfinite(interval_s):
        share = blocking / (interval_s + blocking)
        ettr = goodput.ettr_first_order(interval_s, blocking, restart, ctx.mtti_s) if math.isfinite(restart) else 0.0
    else:
        share, ettr = math.inf, 0.0
    ret = retention(ctx, interval_s + blocking)
    needed_tb = max(ret.perf_tb, tiers.min_capacity_tb(tier_name))
    capacity_ok = catalog.storage_tier(tier_name).model == "per_node" or capacity_tb + 1e-9 >= needed_tb
    reasons = []
    if not share <= ctx.max_overhead:
        reasons.append(
            f"saves block {share:.1%} of the time (target <= {ctx.max_overhead:.1%})"
            if math.isfinite(share)
            else "no write bandwidth: nothing to save to"
        )
    if ctx.goodput_target is not None and ettr < ctx.goodput_target:
        reasons.append(f"ETTR {ettr:.1%} below the goodput target {ctx.goodput_target:.1%}")
    if not drain_ok:
        reasons.append(f"async drain takes {write_s:,.0f} s, longer than the {interval_s:,.0f} s interval")
    if not ram_ok:
        reasons.append(f"staging needs {node_gb:,.0f} GB of host RAM per node, {host_free:,.0f} GB free")
    if not capacity_ok:
        reasons.append(
            f"{capacity_tb:,g} TB is less than the {needed_tb:,.1f} TB the kept checkpoints (and dataset) need"
        )
    feed_gb_s = perf.p10_read_gb_s * ctx.feed_read_factor
    if ctx.feed_read_gb_s > feed_gb_s:
        reasons.append(
            f"reads {feed_gb_s:,.0f} GB/s at its low percentile; the data feed needs {ctx.feed_read_gb_s:,.0f} GB/s"
        )
    price = catalog.gpu_hour_price_usd(ctx.node_type)
    lost_h = ctx.gpus * units.HOURS_PER_MONTH * (1.0 - ettr)
    perf_usd = perf.price_usd_per_month
    return Option(
        tier=tier_name,
        capacity_tb=capacity_tb,
        mode=mode,
        interval_s=interval_s,
        interval_auto=auto,
        write_gb_s=perf.p10_write_gb_s,
        expected_write_gb_s=perf.expected_write_gb_s,
        read_gb_s=perf.p10_read_gb_s,
        write_s=write_s,
        blocking_s=blocking,
        staging_s=staging,
        drain_ok=drain_ok,
        host_ram_needed_gb=node_gb if mode == "async" else 0.0,
        host_ram_free_gb=host_free,
        host_ram_ok=ram_ok,
        share_of_interval=share,
        blocking_steps=blocking / ctx.step_time_s if ctx.step_time_s and math.isfinite(blocking) else None,
        restart_s=restart,
        ettr=ettr,
        capacity_ok=capacity_ok,
        meets=not reasons,
        reasons=tuple(reasons),
        retention=ret,
        perf_usd_per_month=perf_usd,
        storage_usd_per_month=perf_usd + ret.object_usd_per_month + ret.archive_usd_per_month,
        lost_gpu_hours_per_month=lost_h,
        lost_usd_per_month=lost_h * price,
    )


def capacity_grid(tier_name: str, declared_tb: float) -> list[float]:
    """Capacities the search tries: every ``CAPACITY_STEP_TB`` from the tier's floor to the point where
    bandwidth stops growing, plus the declared capacity."""
    tier = catalog.storage_tier(tier_name)
    floor = max(tiers.min_capacity_tb(tier_name), CAPACITY_STEP_TB)
    top = tier.param("max_write_gb_s") / tier.param("write_gb_s_per_tb")
    grid = {float(declared_tb)} if declared_tb > 0 else set()
    tb = math.ceil(floor / CAPACITY_STEP_TB) * CAPACITY_STEP_TB
    while tb <= top + CAPACITY_STEP_TB:
        grid.add(float(tb))
        tb += CAPACITY_STEP_TB
    return sorted(grid)


def search(ctx: Context, tier_name: str, *, declared_tb: float, declared_interval_s: float | None) -> list[Option]:
    """Every configuration of the grid (capacity x mode x interval) that meets the target."""
    intervals: list[float | None] = [None, *INTERVAL_LADDER_S]
    if declared_interval_s is not None and declared_interval_s not in intervals:
        intervals.append(declared_interval_s)
    found = []
    for mode in ("sync", "async"):
        for interval in intervals:
            for tb in capacity_grid(tier_name, declared_tb):
                opt = evaluate(ctx, tier_name, tb, mode, interval)
                if opt.meets:
                    found.append(opt)
    return found


def cheapest(options: list[Option]) -> Option | None:
    """The option with the lowest monthly cost to the customer: storage bill plus the value of the
    GPU-hours that saves and failures waste (ties: the smaller storage bill)."""
    return min(options, key=lambda o: (round(o.total_usd_per_month, 2), o.storage_usd_per_month), default=None)


def cheapest_storage(options: list[Option]) -> Option | None:
    """The option with the lowest storage bill alone (ties: higher ETTR)."""
    return min(options, key=lambda o: (round(o.storage_usd_per_month, 2), -o.ettr), default=None)


def describe_change(declared: Option, best: Option | None) -> list[str]:
    """Human lines: what to change from ``declared`` to ``best``, with the price difference."""
    if best is None:
        return [
            "no configuration of the performance tier meets the target: relax max_checkpoint_overhead "
            "or goodput_target, or shard the checkpoint over more nodes"
        ]
    if declared.meets and best.total_usd_per_month >= declared.total_usd_per_month - 0.5:
        return []
    out = []
    if best.capacity_tb != declared.capacity_tb:
        delta = best.perf_usd_per_month - declared.perf_usd_per_month
        out.append(
            f"parallel_fs_tb {declared.capacity_tb:,g} -> {best.capacity_tb:,g} TB "
            f"({'+' if delta >= 0 else '-'}${abs(delta):,.0f}/month; writes at {best.write_gb_s:,.0f} GB/s)"
        )
    if best.mode != declared.mode:
        out.append(
            f"checkpoint_mode {declared.mode} -> {best.mode} (blocks {best.blocking_s:,.1f} s per save; "
            f"stages {best.host_ram_needed_gb:,.0f} GB per node in host RAM)"
        )
    if not math.isfinite(declared.interval_s):
        daly = " (Daly's optimum)" if best.interval_auto else ""
        out.append(f"checkpoint_interval_s = {best.interval_s:,.0f} s{daly}")
    elif not math.isclose(best.interval_s, declared.interval_s, rel_tol=1e-6):
        out.append(
            f"checkpoint_interval_s {declared.interval_s:,.0f} -> {best.interval_s:,.0f} s"
            + (" (Daly's optimum)" if best.interval_auto else "")
        )
    return out
