"""Storage planner: size the tiers to the checkpoint cadence and the read pattern, not to a capacity figure.

``plan_storage(spec)`` takes a cluster with a ``workload`` block and answers: how big is a checkpoint
(``checkpoints``), what the declared performance tier delivers (``tiers``), how long each save blocks
and what share of the interval and of a step that is, whether that meets the stall/goodput target, the
cheapest configuration (capacity, sync/async, interval) that does, with its price, the retention
capacity per tier, and the data feed (``datafeed``). The search over configurations is in
``sizing.py``. Pure: catalog reads only.
"""

from __future__ import annotations

from dataclasses import asdict, field
from typing import Any

from velyrix import catalog, errors, units
from velyrix.declarations import models
from velyrix.frozen import frozen
from velyrix.planners import checkpoints, datafeed, goodput, sizing, sizing_advice, tiers

PERF_TIER = "parallel_fs"


@frozen
class StoragePlan:
    """The storage section of a cluster plan (``storage_plan`` in docs/plan-schema.md)."""

    checkpoint: checkpoints.CheckpointSize
    architecture: checkpoints.Architecture | None
    perf_tier: tiers.TierPerformance
    tiers: dict[str, tiers.TierPerformance]
    declared: sizing.Option
    target: dict[str, float | None]
    cheapest: sizing.Option | None
    """Lowest storage bill + value of lost GPU-hours among configurations that meet the target."""
    cheapest_storage: sizing.Option | None
    """Lowest storage bill alone among configurations that meet the target."""
    change: list[str]
    """What to change from the declared configuration to reach ``cheapest`` (empty when it meets)."""
    retention: sizing.Retention
    restore: dict[str, Any]
    """Time to read one checkpoint back: ``parallel_fs_s``, ``object_s`` (null when not declared),
    ``archive_h`` [min, max] including retrieval."""
    data_feed: datafeed.DataFeedPlan | None
    failure_rate_per_1000_node_days: float
    warnings: list[str] = field(default_factory=list)

    @property
    def expected_write_gb_s(self) -> float:
        """Mean write GB/s of the performance tier for this job's nodes (what acceptance should measure)."""
        return self.perf_tier.expected_write_gb_s

    @property
    def expected_read_gb_s(self) -> float:
        return self.perf_tier.expected_read_gb_s

    @property
    def meets_target(self) -> bool:
        return self.declared.meets

    def to_dict(self) -> dict[str, Any]:
        return {
            "checkpoint": self.checkpoint.to_dict(),
            "architecture": asdict(self.architecture) if self.architecture else None,
            "perf_tier": self.perf_tier.to_dict(),
            "expected_write_gb_s": self.expected_write_gb_s,
            "expected_read_gb_s": self.expected_read_gb_s,
            "p10_write_gb_s": self.perf_tier.p10_write_gb_s,
            "p10_read_gb_s": self.perf_tier.p10_read_gb_s,
            "tiers": {k: v.to_dict() for k, v in self.tiers.items()},
            "target": dict(self.target),
            "declared": self.declared.to_dict(),
            "meets_target": self.meets_target,
            "cheapest": self.cheapest.to_dict() if self.cheapest else None,
            "cheapest_storage": self.cheapest_storage.to_dict() if self.cheapest_storage else None,
            "change": list(self.change),
            "retention": self.retention.to_dict(),
            "restore": dict(self.restore),
            "data_feed": self.data_feed.to_dict() if self.data_feed else None,
            "failure_rate_per_1000_node_days": self.failure_rate_per_1000_node_days,
            "warnings": list(self.warnings),
        }


def checkpoint_for(
    workload: models.WorkloadSpec, gpus: int, gpus_per_node: int
) -> tuple[checkpoints.CheckpointSize, checkpoints.Architecture | None]:
    """The checkpoint of a declared workload on ``gpus`` GPUs (validates parallelism and the model)."""
    arch = checkpoints.architecture_from({k: getattr(workload, k) for k in checkpoints.ARCH_FIELDS})
    params = checkpoints.params_from(workload.model_params, arch)
    par = checkpoints.resolve_parallelism(
        gpus,
        tp=workload.tp,
        pp=workload.pp,
        dp=workload.dp,
        zero_stage=workload.zero_stage,
        layers=arch.layers if arch else None,
    )
    size = checkpoints.checkpoint_size(
        params, par, bytes_per_param=workload.bytes_per_param, gpus_per_node=gpus_per_node
    )
    return size, arch


def _check_workload(w: models.WorkloadSpec) -> None:
    def frac(name: str, value: float | None, *, closed: bool = False) -> None:
        if value is None:
            return
        ok = 0 < value <= 1 if closed else 0 < value < 1
        if not ok:
            raise errors.InvalidInputError(f"{name} must be a fraction in (0, 1{']' if closed else ')'}, got {value}")

    frac("max_checkpoint_overhead", w.max_checkpoint_overhead)
    frac("goodput_target", w.goodput_target)
    frac("au_target", w.au_target, closed=True)
    if w.checkpoint_mode not in models.CHECKPOINT_MODES:
        raise errors.InvalidInputError(
            f"checkpoint_mode must be one of {', '.join(models.CHECKPOINT_MODES)}, got '{w.checkpoint_mode}'"
        )
    if w.checkpoint_interval_s != "auto" and not (
        isinstance(w.checkpoint_interval_s, (int, float)) and w.checkpoint_interval_s > 0
    ):
        raise errors.InvalidInputError(
            f'checkpoint_interval_s must be > 0 seconds or "auto", got {w.checkpoint_interval_s!r}'
        )
    if w.step_time_s is not None and not w.step_time_s > 0:
        raise errors.InvalidInputError(f"step_time_s must be > 0, got {w.step_time_s}")
    if w.keep_checkpoints < 1 or w.promote_every < 1:
        raise errors.InvalidInputError(
            f"keep_checkpoints and promote_every must be >= 1, got {w.keep_checkpoints} and {w.promote_every}"
        )
    if w.archive_after_days is not None and not w.archive_after_days > 0:
        raise errors.InvalidInputError(f"archive_after_days must be > 0, got {w.archive_after_days}")
    if w.node_failure_rate is not None and not w.node_failure_rate > 0:
        raise errors.InvalidInputError(f"node_failure_rate must be > 0 per 1,000 node-days, got {w.node_failure_rate}")


def plan_storage(spec: models.ClusterSpec) -> StoragePlan:
    """Plan storage for ``spec`` (which must have a ``workload``); see the module docstring.

    Raises ``InvalidInputError`` naming the resource (and its file position) for a workload that
    cannot be: negative sizes, parallelism that does not divide the GPUs, fractions out of range...
    """
    try:
        return _plan_storage(spec)
    except errors.InvalidInputError as exc:
        where = f"{spec.position}: " if spec.position else ""
        raise errors.InvalidInputError(f"{where}{spec.address} workload: {exc.message}", hint=exc.hint) from None


def restore_times(
    ckpt: checkpoints.CheckpointSize, *, nodes: int, node_type: str, perf_tb: float, object_tb: float
) -> dict[str, Any]:
    """Seconds (hours for archive) to read one checkpoint back from each tier at its low percentile."""
    size_gb = ckpt.size_bytes / units.GB
    out: dict[str, Any] = {}
    for name, tb in (("parallel_fs", perf_tb), ("object", object_tb)):
        perf = tiers.tier_performance(name, tb, nodes=nodes, node_type=node_type)
        out[f"{name}_s"] = size_gb / perf.p10_read_gb_s if perf.p10_read_gb_s > 0 and tb > 0 else None
    archive = tiers.tier_performance("archive", 0.0, nodes=nodes, node_type=node_type)
    read_h = size_gb / archive.p10_read_gb_s / units.SECONDS_PER_HOUR
    lo, hi = archive.retrieval_h or (0.0, 0.0)
    out["archive_h"] = [lo + read_h, hi + read_h]
    return out


def _plan_storage(spec: models.ClusterSpec) -> StoragePlan:
    w = spec.workload
    if w is None:
        raise errors.InvalidInputError(f"{spec.address} has no workload block", hint="add workload { ... }")
    _check_workload(w)
    node = catalog.node_type(spec.node_type)
    gpus = spec.node_count * node.gpus_per_node
    ckpt, arch = checkpoint_for(w, gpus, node.gpus_per_node)
    nodes = ckpt.job_nodes
    rate = w.node_failure_rate if w.node_failure_rate is not None else goodput.default_failure_rate()
    mtti = goodput.job_mtti_s(nodes, rate)
    declared_tb = spec.storage.parallel_fs_tb
    interval: float | None = None if w.checkpoint_interval_s == "auto" else float(w.checkpoint_interval_s)
    ctx = sizing.Context(
        ckpt=ckpt,
        node_type=spec.node_type,
        nodes=nodes,
        gpus=ckpt.parallelism.ranks,
        mtti_s=mtti,
        step_time_s=w.step_time_s,
        max_overhead=w.max_checkpoint_overhead,
        goodput_target=w.goodput_target,
        keep=w.keep_checkpoints,
        promote_every=w.promote_every,
        archive_after_days=w.archive_after_days,
        dataset_perf_tb=0.0,
    )
    warnings: list[str] = []
    # The data feed decides whether the dataset takes room on the performance tier.
    feed = None
    if w.dataset_tb is not None:
        rate_per_gpu = datafeed.samples_rate(w.samples_per_s_per_gpu, w.step_time_s, w.batch_per_gpu)
        probe = sizing.evaluate(ctx, PERF_TIER, declared_tb, w.checkpoint_mode, interval)
        drain = ckpt.size_bytes / units.GB / probe.interval_s if w.checkpoint_mode == "async" else None
        feed = datafeed.plan_data_feed(
            dataset_tb=w.dataset_tb,
            gpus=ckpt.parallelism.ranks,
            nodes=nodes,
            node_type=spec.node_type,
            sample_mb=w.sample_mb,
            read_pattern=w.read_pattern,
            rate_per_gpu=rate_per_gpu,
            au_target=w.au_target,
            perf_tb=declared_tb,
            capacity_tier_tb=spec.storage.parallel_fs_capacity_tb,
            checkpoint_tb=probe.retention.perf_tb,
            checkpoint_drain_gb_s=drain,
        )
        if feed.tier == PERF_TIER:
            factor = catalog.storage_tier(PERF_TIER).params.get("random_read_factor", 1.0)
            ctx = sizing.replace_dataset(
                ctx, w.dataset_tb, feed.required_read_gb_s or 0.0, factor if w.read_pattern == "random" else 1.0
            )
        if feed.meets_au_target is False:
            warnings.append(
                f"the {feed.tier} tier reads {feed.tier_read_p10_gb_s:,.0f} GB/s at its low "
                f"percentile; the job needs {feed.required_read_gb_s:,.0f} GB/s for AU "
                f"{feed.au_target:.0%}"
            )
    declared = sizing.evaluate(ctx, PERF_TIER, declared_tb, w.checkpoint_mode, interval)
    cheapest, cheapest_storage = sizing.best(ctx, PERF_TIER, declared_tb=declared_tb, declared_interval_s=interval)
    if declared_tb <= 0:
        warnings.append("no performance tier declared (parallel_fs_tb = 0): checkpoints have nowhere fast to go")
    if spec.storage.object_tb and declared.retention.object_tb > spec.storage.object_tb:
        warnings.append(
            f"promoted checkpoints need {declared.retention.object_tb:,.0f} TB of object storage; "
            f"{spec.storage.object_tb:,g} TB declared"
        )
    if w.checkpoint_mode == "async" and not declared.host_ram_ok:
        warnings.append("async saves need more host RAM for the staged copy than the nodes have free")
    if ckpt.parallelism.tp > node.gpus_per_node:
        warnings.append(f"tp={ckpt.parallelism.tp} spans nodes (a node has {node.gpus_per_node} GPUs on NVLink)")
    perf = tiers.tier_performance(PERF_TIER, declared_tb, nodes=nodes, node_type=spec.node_type)
    declared_tiers = {}
    for key, tb in spec.storage.by_key().items():
        if tb > 0:
            tier = catalog.storage_tier_by_hcl_key(key)
            declared_tiers[tier.name] = tiers.tier_performance(tier.name, tb, nodes=nodes, node_type=spec.node_type)
    declared_tiers["local_scratch"] = tiers.tier_performance(
        "local_scratch", 0.0, nodes=nodes, node_type=spec.node_type
    )
    return StoragePlan(
        checkpoint=ckpt,
        architecture=arch,
        perf_tier=perf,
        tiers=declared_tiers,
        declared=declared,
        target={"max_checkpoint_overhead": w.max_checkpoint_overhead, "goodput_target": w.goodput_target},
        cheapest=cheapest,
        cheapest_storage=cheapest_storage,
        change=sizing_advice.describe_change(declared, cheapest),
        retention=declared.retention,
        data_feed=feed,
        restore=restore_times(
            ckpt, nodes=nodes, node_type=spec.node_type, perf_tb=declared_tb, object_tb=spec.storage.object_tb
        ),
        failure_rate_per_1000_node_days=rate,
        warnings=warnings,
    )


def plan_goodput_for(
    spec: models.ClusterSpec,
    plan: StoragePlan,
    *,
    replicas: int = 2000,
    horizon_days: float = 30.0,
    seed: int = 0,
    simulate: bool = True,
) -> goodput.GoodputPlan | None:
    """Goodput of the declared configuration of ``plan``: its blocking seconds per save, its restart
    cost (detect + reschedule + reload at the tier's low-percentile read) and its interval (``simulate``: with
    the Monte Carlo, else the closed-form expected ETTR only). ``None`` when no performance tier is declared
    (nothing to save to)."""
    d = plan.declared
    if not (d.blocking_s < float("inf") and d.interval_s < float("inf") and d.restart_s < float("inf")):
        return None
    return goodput.plan_goodput(
        gpus=plan.checkpoint.parallelism.ranks,
        node_type=spec.node_type,
        failure_rate=plan.failure_rate_per_1000_node_days,
        save_s=d.blocking_s,
        restart_s=d.restart_s,
        interval_s=d.interval_s,
        low_percentile_derate=1.0,
        horizon_days=horizon_days,
        replicas=replicas,
        seed=seed,
        simulate=simulate,
    )
