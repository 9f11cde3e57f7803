"""What a cluster's ``workload`` block asks of the twin: bytes per save, step time, interval, data reads.

Sizes come from the model shape and parallelism (``velyrix.planners.storage.checkpoint_for``: bytes, not
a prediction); everything about time is left to the twin (``velyrix.ops.workload.runner``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from velyrix import catalog, errors, units
from velyrix.declarations import models
from velyrix.planners import storage as storage_planner

MODES = ("sync", "async")


@dataclass(frozen=True)
class JobSpec:
    """A training job as the twin runs it. Bytes in bytes, times in seconds, rates per second."""

    name: str
    region: str
    node_type: str
    nodes: int
    gpus: int
    checkpoint_bytes: float
    per_node_bytes: float
    per_rank_bytes: float
    step_time_s: float
    interval_s: float
    mode: str
    parallel_fs_tb: float
    read_bytes_per_s: float
    """Dataset bytes the whole job reads per second of training."""
    random_reads: bool
    detect_s: float
    reschedule_s: float
    staging_gb_s_per_gpu: float
    async_fixed_s: float
    storage_plane_gb_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Overrides:
    """What a what-if run changes: interval (s), mode (sync/async), performance tier size (TB)."""

    interval_s: float | None = None
    mode: str | None = None
    parallel_fs_tb: float | None = None

    def apply(self, spec: models.ClusterSpec) -> models.ClusterSpec:
        """``spec`` with these changes (checked: interval > 0, a known mode, tier size > 0)."""
        w = spec.workload
        if w is None:
            raise errors.InvalidInputError(f"cluster '{spec.name}' declares no workload block")
        if self.interval_s is not None and not self.interval_s > 0:
            raise errors.InvalidInputError(f"interval must be > 0 s, got {self.interval_s}", hint="e.g. 2700")
        if self.mode is not None and self.mode not in MODES:
            raise errors.UnknownNameError("checkpoint mode", self.mode, MODES)
        if self.parallel_fs_tb is not None and not self.parallel_fs_tb > 0:
            raise errors.InvalidInputError(f"parallel_fs_tb must be > 0, got {self.parallel_fs_tb}", hint="e.g. 100")
        w = dataclasses.replace(
            w,
            checkpoint_interval_s=w.checkpoint_interval_s if self.interval_s is None else self.interval_s,
            checkpoint_mode=self.mode or w.checkpoint_mode,
        )
        st = spec.storage
        if self.parallel_fs_tb is not None:
            st = dataclasses.replace(st, parallel_fs_tb=self.parallel_fs_tb)
        return dataclasses.replace(spec, workload=w, storage=st)

    def describe(self) -> list[str]:
        out = []
        if self.interval_s is not None:
            out.append(f"checkpoint_interval_s = {self.interval_s:g}")
        if self.mode is not None:
            out.append(f"checkpoint_mode = {self.mode}")
        if self.parallel_fs_tb is not None:
            out.append(f"parallel_fs_tb = {self.parallel_fs_tb:g}")
        return out


def job_from(spec: models.ClusterSpec, *, storage_plane_gb_s: float | None = None) -> JobSpec:
    """The ``JobSpec`` of ``spec``'s workload block. Raises ``InvalidInputError`` when the block is missing,
    has no step time, an automatic interval (the twin runs a declared one) or no performance tier."""
    w = spec.workload
    if w is None:
        raise errors.InvalidInputError(
            f"cluster '{spec.name}' declares no workload block", hint="add workload { ... } to the cluster"
        )
    if w.step_time_s is None or not w.step_time_s > 0:
        raise errors.InvalidInputError(
            f"the workload of '{spec.name}' needs step_time_s to run on the twin", hint="e.g. step_time_s = 12"
        )
    if w.checkpoint_interval_s == "auto":
        raise errors.InvalidInputError(
            f"the workload of '{spec.name}' has checkpoint_interval_s = \"auto\": the twin runs a declared interval",
            hint="give seconds (the plan's Daly interval, e.g. 2469), or --interval",
        )
    if not spec.storage.parallel_fs_tb > 0:
        raise errors.InvalidInputError(
            f"cluster '{spec.name}' declares no performance tier to save to", hint="storage { parallel_fs_tb = 800 }"
        )
    nt = catalog.node_type(spec.node_type)
    size, _ = storage_planner.checkpoint_for(w, spec.gpus, nt.gpus_per_node)
    ranks = size.parallelism.ranks
    cfg = catalog.load_toml("checkpointing.toml")
    samples_per_s = _samples_per_s_per_gpu(w)
    return JobSpec(
        name=spec.name,
        region=spec.region,
        node_type=spec.node_type,
        nodes=-(-ranks // nt.gpus_per_node),
        gpus=ranks,
        checkpoint_bytes=size.size_bytes,
        per_node_bytes=size.per_node_bytes,
        per_rank_bytes=size.per_rank_bytes,
        step_time_s=float(w.step_time_s),
        interval_s=float(w.checkpoint_interval_s),
        mode=w.checkpoint_mode,
        parallel_fs_tb=float(spec.storage.parallel_fs_tb),
        read_bytes_per_s=samples_per_s * ranks * float(w.sample_mb or 0.0) * units.MB,
        random_reads=w.read_pattern == "random",
        detect_s=float(cfg["restart"]["detect_s"]),
        reschedule_s=float(cfg["restart"]["reschedule_s"]),
        staging_gb_s_per_gpu=float(cfg["staging"]["d2h_gb_s_per_gpu"]),
        async_fixed_s=float(cfg["staging"]["async_fixed_s"]),
        storage_plane_gb_s=storage_plane_gb_s,
    )


def _samples_per_s_per_gpu(w: models.WorkloadSpec) -> float:
    if w.samples_per_s_per_gpu is not None:
        return float(w.samples_per_s_per_gpu)
    if w.batch_per_gpu is not None and w.step_time_s:
        return w.batch_per_gpu / float(w.step_time_s)
    return 0.0
