"""Data feed: the read bandwidth that keeps the GPUs busy, and where the dataset should live.

Needed bandwidth = GPUs x samples/s/GPU x sample size x accelerator-utilization target (MLPerf Storage
counts AU = compute time / wall time, so storage delivering a share AU of the compute-bound rate keeps
AU; REFERENCE §2: unet3d, 146.6 MB samples, batch 7, 0.323 s/step on H100 => ~3.2 GB/s per GPU).
A dataset that fits every node's local NVMe cache is read once from the shared tier and then locally;
otherwise the shared tier must sustain the rate, at its low percentile, derated for random reads.
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from velyrix import catalog, errors, units
from velyrix.frozen import frozen
from velyrix.planners import tiers


@frozen
class DataFeedPlan:
    """Read bandwidth needed by the job and whether the chosen tier delivers it."""

    dataset_tb: float
    sample_mb: float | None
    read_pattern: str
    samples_per_s_per_gpu: float | None
    au_target: float
    gpus: int
    compute_bound_read_gb_s: float | None
    """Aggregate read rate if the GPUs never waited (samples/s x sample size)."""
    required_read_gb_s: float | None
    """compute_bound x AU target: the floor the storage must sustain."""
    per_gpu_read_gb_s: float | None
    local_cache_tb_per_node: float
    fits_local_nvme: bool
    tier: str
    """Where the dataset should live: ``local_scratch`` (cached), ``parallel_fs`` or ``parallel_fs_capacity``."""
    tier_read_p10_gb_s: float | None
    """Low-percentile read bandwidth of the serving tier, derated for random reads."""
    meets_au_target: bool | None
    headroom_gb_s: float | None
    headroom_during_checkpoint_gb_s: float | None
    """Read headroom while an async checkpoint drains (sync saves pause the readers)."""
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["notes"] = list(self.notes)
        return out


def samples_rate(
    samples_per_s_per_gpu: float | None, step_time_s: float | None, batch_per_gpu: int | None
) -> float | None:
    """Samples per second per GPU, given directly or as batch / step time; ``None`` if neither."""
    if samples_per_s_per_gpu is not None:
        if not samples_per_s_per_gpu > 0:
            raise errors.InvalidInputError(f"samples per second per GPU must be > 0, got {samples_per_s_per_gpu}")
        return float(samples_per_s_per_gpu)
    if batch_per_gpu is not None and step_time_s is not None:
        if batch_per_gpu < 1 or not step_time_s > 0:
            raise errors.InvalidInputError(
                f"batch per GPU must be >= 1 and step time > 0, got {batch_per_gpu} and {step_time_s}"
            )
        return batch_per_gpu / step_time_s
    return None


def plan_data_feed(
    *,
    dataset_tb: float,
    gpus: int,
    nodes: int,
    node_type: str,
    sample_mb: float | None,
    read_pattern: str,
    rate_per_gpu: float | None,
    au_target: float,
    perf_tb: float,
    capacity_tier_tb: float,
    checkpoint_tb: float,
    checkpoint_drain_gb_s: float | None,
) -> DataFeedPlan:
    """Plan the dataset's tier and check the read bandwidth.

    ``perf_tb``/``capacity_tier_tb``: declared TB of the parallel FS tiers; ``checkpoint_tb``: TB the
    checkpoints keep on the performance tier; ``checkpoint_drain_gb_s``: write rate of an async drain
    running beside the readers (``None`` for sync saves).
    """
    if not math.isfinite(dataset_tb) or dataset_tb < 0:
        raise errors.InvalidInputError(f"dataset size must be >= 0 TB, got {dataset_tb}")
    if sample_mb is not None and not sample_mb > 0:
        raise errors.InvalidInputError(f"sample size must be > 0 MB, got {sample_mb}")
    if read_pattern not in ("sequential", "random"):
        raise errors.InvalidInputError(f"read pattern must be 'sequential' or 'random', got '{read_pattern}'")
    if not 0 < au_target <= 1:
        raise errors.InvalidInputError(f"AU target must be in (0, 1], got {au_target}", hint="default 0.9")
    node = catalog.node_type(node_type)
    fraction = float(catalog.load_toml("checkpointing.toml")["data_feed"]["local_cache_fraction"])
    cache_tb = node.local_nvme_tb * fraction
    fits = dataset_tb <= cache_tb
    notes: list[str] = []
    full = required = per_gpu = None
    if rate_per_gpu is not None and sample_mb is not None:
        per_gpu = rate_per_gpu * sample_mb * units.MB / units.GB
        full = per_gpu * gpus
        required = full * au_target
    elif dataset_tb > 0:
        notes.append("no sample size or rate given: bandwidth not checked")
    # Where the data lives: cache locally when it fits; else the performance tier when it has room
    # beside the checkpoints; else the capacity tier.
    if fits:
        tier = "local_scratch"
        notes.append("first epoch reads from the shared tier, later epochs from local NVMe")
    elif perf_tb - checkpoint_tb >= dataset_tb:
        tier = "parallel_fs"
    elif capacity_tier_tb >= dataset_tb:
        tier = "parallel_fs_capacity"
    else:
        tier = "parallel_fs"
        notes.append(
            f"dataset ({dataset_tb:,g} TB) does not fit the declared tiers beside the checkpoints "
            f"({checkpoint_tb:,.1f} TB)"
        )
    cap_tb = {"local_scratch": 0.0, "parallel_fs": perf_tb, "parallel_fs_capacity": capacity_tier_tb}[tier]
    perf = tiers.tier_performance(tier, cap_tb, nodes=nodes, node_type=node_type)
    factor = perf.random_read_factor if read_pattern == "random" else 1.0
    read_p10 = perf.p10_read_gb_s * factor
    meets = headroom = during = None
    if required is not None:
        headroom = read_p10 - required
        meets = headroom >= 0
        during = headroom
        if checkpoint_drain_gb_s and tier != "local_scratch" and perf.p10_write_gb_s > 0:
            busy = min(1.0, checkpoint_drain_gb_s / perf.p10_write_gb_s)
            during = read_p10 * (1.0 - busy) - required
    return DataFeedPlan(
        dataset_tb=dataset_tb,
        sample_mb=sample_mb,
        read_pattern=read_pattern,
        samples_per_s_per_gpu=rate_per_gpu,
        au_target=au_target,
        gpus=gpus,
        compute_bound_read_gb_s=full,
        required_read_gb_s=required,
        per_gpu_read_gb_s=per_gpu,
        local_cache_tb_per_node=cache_tb,
        fits_local_nvme=fits,
        tier=tier,
        tier_read_p10_gb_s=read_p10,
        meets_au_target=meets,
        headroom_gb_s=headroom,
        headroom_during_checkpoint_gb_s=during,
        notes=tuple(notes),
    )
