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
import itertools
import math
from typing import Any, NamedTuple

from velyrix import catalog, errors, units
from velyrix.frozen import frozen
from velyrix.planners import checkpoints, goodput, tiers

DAYS_PER_MONTH = units.HOURS_PER_MONTH / 24.0
INTERVAL_LADDER_S = (600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0, 5400.0, 7200.0)
"""Intervals the search tries besides the declared one and Daly's optimum."""
CAPACITY_STEP_TB = 50.0
ROUNDING_MARGIN_USD = 0.02
"""Options are ranked on prices rounded to the cent; one more than this above the best cannot tie it."""


@frozen
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


@frozen
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


def _retention_tb(ctx: Context, cycle_s: float) -> tuple[float, float, float]:
    """(promoted per day, object TB, archive TB per month) for one save every ``cycle_s`` seconds."""
    size_tb = ctx.ckpt.size_bytes / units.TB
    per_day = units.SECONDS_PER_DAY / cycle_s / ctx.promote_every if math.isfinite(cycle_s) else 0.0
    if ctx.archive_after_days is not None:
        object_tb = size_tb * per_day * ctx.archive_after_days
        archive_tb = size_tb * per_day * DAYS_PER_MONTH
    else:
        object_tb, archive_tb = size_tb * per_day * DAYS_PER_MONTH, 0.0
    return per_day, object_tb, archive_tb


def retention(ctx: Context, cycle_s: float) -> Retention:
    """Retention capacity for one save every ``cycle_s`` wall seconds."""
    per_day, object_tb, archive_tb = _retention_tb(ctx, cycle_s)
    return Retention(
        keep_on_perf=ctx.keep,
        promote_every=ctx.promote_every,
        archive_after_days=ctx.archive_after_days,
        perf_tb=(ctx.keep + 1) * (ctx.ckpt.size_bytes / units.TB) + ctx.dataset_perf_tb,
        promoted_per_day=per_day,
        object_tb=object_tb,
        archive_tb_per_month=archive_tb,
        object_usd_per_month=object_tb * catalog.storage_tier("object").price_usd_per_tb_month,
        archive_usd_per_month=archive_tb * catalog.storage_tier("archive").price_usd_per_tb_month,
    )


@frozen
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


class _Fixed(NamedTuple):
    """What one (job, tier) pair fixes for every configuration: read once per ``search``/``evaluate``."""

    size_gb: float
    node_gb: float
    node_p10_gb_s: float
    host_free_gb: float
    ram_ok: bool
    """Async only: the busiest node's shard fits the host RAM free for staging."""
    staging_s: float
    restart_fixed_s: float
    per_node_model: bool
    needed_tb: float
    gpu_hour_usd: float


class _AtCapacity(NamedTuple):
    """What one capacity of the tier fixes for every mode and interval."""

    perf: tiers.TierPerformance
    write_s: float
    reload_s: float
    capacity_ok: bool
    feed_gb_s: float
    feed_ok: bool
    restart_finite: bool


def _check(name: str, value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise errors.InvalidInputError(f"{name} must be a finite number > 0, got {value!r}")


def _fixed(ctx: Context, tier_name: str, interval_s: float | None) -> _Fixed:
    """The job's fixed figures; checks the MTTI and a declared interval (the grid relies on both)."""
    _check("MTTI", ctx.mtti_s)
    _check("checkpoint interval", interval_s)
    cfg = catalog.load_toml("checkpointing.toml")
    node = catalog.node_type(ctx.node_type)
    tier = catalog.storage_tier(tier_name)
    staging = cfg["staging"]
    size_tb = ctx.ckpt.size_bytes / units.TB
    node_gb = ctx.ckpt.per_node_bytes / units.GB
    host_free = node.host_ram_gb * float(staging["host_ram_fraction"])
    return _Fixed(
        size_gb=ctx.ckpt.size_bytes / units.GB,
        node_gb=node_gb,
        node_p10_gb_s=node.storage_gb_s * tier.p10_derate,
        host_free_gb=host_free,
        ram_ok=node_gb <= host_free,
        staging_s=ctx.ckpt.per_rank_bytes / units.GB / float(staging["d2h_gb_s_per_gpu"])
        + float(staging["async_fixed_s"]),
        restart_fixed_s=float(cfg["restart"]["detect_s"]) + float(cfg["restart"]["reschedule_s"]),
        per_node_model=tier.model == "per_node",
        needed_tb=max((ctx.keep + 1) * size_tb + ctx.dataset_perf_tb, tiers.min_capacity_tb(tier_name)),
        gpu_hour_usd=catalog.gpu_hour_price_usd(ctx.node_type),
    )


def _at_capacity(ctx: Context, fx: _Fixed, tier_name: str, capacity_tb: float) -> _AtCapacity:
    perf = tiers.tier_performance(tier_name, capacity_tb, nodes=ctx.nodes, node_type=ctx.node_type)

    def transfer_s(agg_gb_s: float) -> float:
        return max(fx.size_gb / agg_gb_s, fx.node_gb / fx.node_p10_gb_s) if agg_gb_s > 0 else math.inf

    reload_s = transfer_s(perf.p10_read_gb_s)
    feed_gb_s = perf.p10_read_gb_s * ctx.feed_read_factor
    return _AtCapacity(
        perf=perf,
        write_s=transfer_s(perf.p10_write_gb_s),
        reload_s=reload_s,
        capacity_ok=fx.per_node_model or capacity_tb + 1e-9 >= fx.needed_tb,
        feed_gb_s=feed_gb_s,
        feed_ok=not ctx.feed_read_gb_s > feed_gb_s,
        restart_finite=math.isfinite(fx.restart_fixed_s + reload_s),
    )


class _Timing(NamedTuple):
    """Mode- and interval-dependent figures of one configuration."""

    interval_s: float
    blocking_s: float
    restart_s: float
    share: float
    ettr: float
    drain_ok: bool
    ram_ok: bool
    meets: bool


def _timing(ctx: Context, fx: _Fixed, at: _AtCapacity, mode: str, interval_s: float | None) -> _Timing:
    """The figures of one configuration (``goodput``'s Daly interval and first-order ETTR)."""
    return _Timing._make(_timing_tuple(ctx, fx, at, mode == "async", interval_s))


def _timing_tuple(
    ctx: Context, fx: _Fixed, at: _AtCapacity, is_async: bool, interval_s: float | None
) -> tuple[float, float, float, float, float, bool, bool, bool]:
    """``_Timing`` as a plain tuple: the grid search calls this ~2,000 times per cluster."""
    blocking = fx.staging_s if is_async else at.write_s
    if interval_s is None:
        interval_s = goodput.daly_interval_s(blocking, ctx.mtti_s) if math.isfinite(blocking) else math.inf
        if is_async:
            interval_s = max(interval_s, at.write_s)  # the drain must finish before the next save
    drain_ok = not is_async or at.write_s <= interval_s
    ram_ok = not is_async or fx.ram_ok
    restart = fx.restart_fixed_s + at.reload_s
    if math.isfinite(blocking) and math.isfinite(interval_s):
        share = blocking / (interval_s + blocking)
        # blocking, interval and restart are finite here and >= 0 (interval > 0); _fixed checked the MTTI
        ettr = goodput.ettr_first_order_checked(interval_s, blocking, restart, ctx.mtti_s) if at.restart_finite else 0.0
    else:
        share, ettr = math.inf, 0.0
    meets = (
        share <= ctx.max_overhead
        and (ctx.goodput_target is None or not ettr < ctx.goodput_target)
        and drain_ok
        and ram_ok
        and at.capacity_ok
        and at.feed_ok
    )
    return interval_s, blocking, restart, share, ettr, drain_ok, ram_ok, meets


def _reasons(ctx: Context, fx: _Fixed, at: _AtCapacity, capacity_tb: float, tm: _Timing) -> tuple[str, ...]:
    """Why a configuration misses the target, one line per unmet condition (empty when it meets)."""
    if tm.meets:
        return ()
    reasons = []
    if not tm.share <= ctx.max_overhead:
        reasons.append(
            f"saves block {tm.share:.1%} of the time (target <= {ctx.max_overhead:.1%})"
            if math.isfinite(tm.share)
            else "no write bandwidth: nothing to save to"
        )
    if ctx.goodput_target is not None and tm.ettr < ctx.goodput_target:
        reasons.append(f"ETTR {tm.ettr:.1%} below the goodput target {ctx.goodput_target:.1%}")
    if not tm.drain_ok:
        reasons.append(f"async drain takes {at.write_s:,.0f} s, longer than the {tm.interval_s:,.0f} s interval")
    if not tm.ram_ok:
        reasons.append(f"staging needs {fx.node_gb:,.0f} GB of host RAM per node, {fx.host_free_gb:,.0f} GB free")
    if not at.capacity_ok:
        reasons.append(
            f"{capacity_tb:,g} TB is less than the {fx.needed_tb:,.1f} TB the kept checkpoints (and dataset) need"
        )
    if ctx.feed_read_gb_s > at.feed_gb_s:
        reasons.append(
            f"reads {at.feed_gb_s:,.0f} GB/s at its low percentile; the data feed needs {ctx.feed_read_gb_s:,.0f} GB/s"
        )
    return tuple(reasons)


def _option(
    ctx: Context, fx: _Fixed, at: _AtCapacity, tier_name: str, capacity_tb: float, mode: str, auto: bool, tm: _Timing
) -> Option:
    ret = retention(ctx, tm.interval_s + tm.blocking_s)
    lost_h = ctx.gpus * units.HOURS_PER_MONTH * (1.0 - tm.ettr)
    perf = at.perf
    reasons = _reasons(ctx, fx, at, capacity_tb, tm)
    return Option(
        tier=tier_name,
        capacity_tb=capacity_tb,
        mode=mode,
        interval_s=tm.interval_s,
        interval_auto=auto,
        write_gb_s=perf.p10_write_gb_s,
        expected_write_gb_s=perf.expected_write_gb_s,
        read_gb_s=perf.p10_read_gb_s,
        write_s=at.write_s,
        blocking_s=tm.blocking_s,
        staging_s=fx.staging_s if mode == "async" else None,
        drain_ok=tm.drain_ok,
        host_ram_needed_gb=fx.node_gb if mode == "async" else 0.0,
        host_ram_free_gb=fx.host_free_gb,
        host_ram_ok=tm.ram_ok,
        share_of_interval=tm.share,
        blocking_steps=tm.blocking_s / ctx.step_time_s if ctx.step_time_s and math.isfinite(tm.blocking_s) else None,
        restart_s=tm.restart_s,
        ettr=tm.ettr,
        capacity_ok=at.capacity_ok,
        meets=not reasons,
        reasons=reasons,
        retention=ret,
        perf_usd_per_month=perf.price_usd_per_month,
        storage_usd_per_month=perf.price_usd_per_month + ret.object_usd_per_month + ret.archive_usd_per_month,
        lost_gpu_hours_per_month=lost_h,
        lost_usd_per_month=lost_h * fx.gpu_hour_usd,
    )


def evaluate(ctx: Context, tier_name: str, capacity_tb: float, mode: str, interval_s: float | None) -> Option:
    """Cost of saving ``ctx.ckpt`` to ``tier_name`` at ``capacity_tb`` in ``mode`` every ``interval_s``
    seconds (``None``: Daly's optimum for this configuration's blocking time)."""
    fx = _fixed(ctx, tier_name, interval_s)
    at = _at_capacity(ctx, fx, tier_name, capacity_tb)
    tm = _timing(ctx, fx, at, mode, interval_s)
    return _option(ctx, fx, at, tier_name, capacity_tb, mode, interval_s is None, tm)


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
    """Every configuration of the grid (capacity x mode x interval) that meets the target, in grid order.

    The tier is evaluated once per capacity and the job's fixed figures once per call; only the
    configurations that meet the target are built into ``Option`` records.
    """
    intervals: list[float | None] = [None, *INTERVAL_LADDER_S]
    if declared_interval_s is not None and declared_interval_s not in intervals:
        intervals.append(declared_interval_s)
    fx = _fixed(ctx, tier_name, declared_interval_s)
    grid = [(tb, _at_capacity(ctx, fx, tier_name, tb)) for tb in capacity_grid(tier_name, declared_tb)]
    found = []
    for mode in ("sync", "async"):
        for interval in intervals:
            for tb, at in grid:
                tm = _timing(ctx, fx, at, mode, interval)
                if tm.meets:
                    found.append(_option(ctx, fx, at, tier_name, tb, mode, interval is None, tm))
    return found


def cheapest(options: list[Option]) -> Option | None:
    """The option with the lowest monthly cost to the customer: storage bill plus the value of the
    GPU-hours that saves and failures waste (ties: the smaller storage bill)."""
    return min(options, key=lambda o: (round(o.total_usd_per_month, 2), o.storage_usd_per_month), default=None)


def cheapest_storage(options: list[Option]) -> Option | None:
    """The option with the lowest storage bill alone (ties: higher ETTR)."""
    return min(options, key=lambda o: (round(o.storage_usd_per_month, 2), -o.ettr), default=None)


def best(
    ctx: Context, tier_name: str, *, declared_tb: float, declared_interval_s: float | None
) -> tuple[Option | None, Option | None]:
    """``(cheapest(search(...)), cheapest_storage(search(...)))`` without building every option: the
    grid is ranked on its monthly figures (computed as ``Option`` computes them) and only the two
    winners become ``Option`` records. Ties go to the first in grid order, as ``min`` does."""
    intervals: list[float | None] = [None, *INTERVAL_LADDER_S]
    if declared_interval_s is not None and declared_interval_s not in intervals:
        intervals.append(declared_interval_s)
    fx = _fixed(ctx, tier_name, declared_interval_s)
    grid = [(tb, _at_capacity(ctx, fx, tier_name, tb)) for tb in capacity_grid(tier_name, declared_tb)]
    object_usd_tb = catalog.storage_tier("object").price_usd_per_tb_month
    archive_usd_tb = catalog.storage_tier("archive").price_usd_per_tb_month
    gpu_usd_month = ctx.gpus * units.HOURS_PER_MONTH
    total_best: tuple[tuple[float, float], tuple[Any, ...]] | None = None
    total_raw = storage_raw = math.inf
    storage_best: tuple[tuple[float, float], tuple[Any, ...]] | None = None
    for is_async, interval, (tb, at) in itertools.product((False, True), intervals, grid):  # sync first
        # Both monthly figures are at least the capacity's storage bill: far above both bests, it cannot win.
        if at.perf.price_usd_per_month > max(total_raw, storage_raw) + ROUNDING_MARGIN_USD:
            continue
        tm = _timing_tuple(ctx, fx, at, is_async, interval)
        if not tm[7]:
            continue
        _, object_tb, archive_tb = _retention_tb(ctx, tm[0] + tm[1])
        storage_usd = at.perf.price_usd_per_month + object_tb * object_usd_tb + archive_tb * archive_usd_tb
        total_usd = storage_usd + gpu_usd_month * (1.0 - tm[4]) * fx.gpu_hour_usd
        found = (tb, at, "async" if is_async else "sync", interval is None, tm)
        # round(x, 2) is monotone: a figure more than a cent above the best cannot win or tie.
        if total_usd <= total_raw + ROUNDING_MARGIN_USD:
            total_key = (round(total_usd, 2), storage_usd)
            if total_best is None or total_key < total_best[0]:
                total_best, total_raw = (total_key, found), total_usd
        if storage_usd <= storage_raw + ROUNDING_MARGIN_USD:
            storage_key = (round(storage_usd, 2), -tm[4])
            if storage_best is None or storage_key < storage_best[0]:
                storage_best, storage_raw = (storage_key, found), storage_usd

    def build(won: tuple[tuple[float, float], tuple[Any, ...]] | None) -> Option | None:
        if won is None:
            return None
        tb, at, mode, auto, tm = won[1]
        return _option(ctx, fx, at, tier_name, tb, mode, auto, _Timing._make(tm))

    return build(total_best), build(storage_best)
