"""What to change from a declared storage configuration to the cheapest one that meets the target
(human lines with prices), for ``velyrix plan`` and ``velyrix checkpoint``."""

from __future__ import annotations

import math

from velyrix.planners.sizing import Option


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
