"""Goodput proven on the twin: examples/acme-405b.tf as a simulated training job beside its plan.

1. A 54-day run of the 512-GPU job (target: under 60 s wall).
2. 20 seeds of 30 days (the plan's run length) under reactive and proactive health: mean measured ETTR
   against the plan's (target: within 1 point), seeds inside the plan's per-run interval (target: all),
   checkpoint stall share against the plan's (target: within 0.2 points).
3. The performance tier cut to a tenth (80 TB): measured stall share against the plan's for that size
   (target: within 20% relative), then the plan's cheapest change re-run (target: stall under the 2% cap).
4. Proactive against reactive health on the same seeds, beside the offline ``health evaluate`` study on
   the same twin size and checkpoint interval.

``BENCH_WORKLOAD_SEEDS`` (default 20) changes the number of seeds.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from velyrix.declarations import loader
from velyrix.ops.scheduler import clusters
from velyrix.ops.workload import runner, study
from velyrix.ops.workload.job import Overrides

ACME = Path(__file__).resolve().parents[1] / "examples" / "acme-405b.tf"
SEEDS = int(os.environ.get("BENCH_WORKLOAD_SEEDS", "20"))


def _long_run(spec, cluster) -> None:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    r = study.simulate(spec, cluster, runner.RunConfig(seed=0, days=54.0, policy="proactive"))
    wall = time.perf_counter() - start
    m = r["measured"]
    print(
        f"54-day run, {r['job']['gpus']} GPUs on {r['job']['nodes']} nodes: {wall:.1f} s wall (target < 60 s); "
        f"{m['saves_complete']:,} saves, {m['job_interruptions']} interruptions, {m['restarts']} restarts, "
        f"ETTR {m['ettr']:.4%}"
    )


def _seeds(spec, cluster) -> dict[str, dict]:  # type: ignore[type-arg, no-untyped-def]
    out = {}
    for policy in ("reactive", "proactive"):
        start = time.perf_counter()
        s = study.over_seeds(spec, cluster, list(range(SEEDS)), days=30.0, policy=policy)
        lo, hi = s["planned_run_interval"]
        print(
            f"{policy}: {SEEDS} seeds x 30 days in {time.perf_counter() - start:.1f} s; measured ETTR mean "
            f"{s['measured_ettr_mean']:.4%} vs plan {s['planned_ettr']:.4%} ({s['ettr_difference_points']:+.3f} "
            f"points, target within 1); inside the plan's per-run interval {lo:.2%}-{hi:.2%}: "
            f"{s['inside_run_interval']}/{SEEDS} (target all); stall {s['measured_checkpoint_stall_mean']:.4%} "
            f"vs plan {s['planned_checkpoint_stall_share']:.4%} ({s['stall_difference_points']:+.3f} points, "
            "target within 0.2)"
        )
        runs = s["runs"]
        print(
            f"  per seed ETTR min {min(x['ettr'] for x in runs):.4%} max {max(x['ettr'] for x in runs):.4%}; "
            f"interruptions per run {statistics.fmean(x['interruptions'] for x in runs):.2f}, "
            f"caught on precursors {statistics.fmean(x['caught'] for x in runs):.2f}"
        )
        outside = [x["seed"] for x in runs if not x["inside"]]
        if outside:
            print(f"  seeds outside the interval: {outside}")
        out[policy] = s
    return out


def _tier_cut(spec, cluster) -> None:  # type: ignore[no-untyped-def]
    seeds = list(range(min(SEEDS, 5)))
    cut = [
        study.simulate(
            spec, cluster, runner.RunConfig(seed=s, days=30.0, policy="reactive"), Overrides(parallel_fs_tb=80.0)
        )
        for s in seeds
    ]
    planned = cut[0]["comparison"]["planned_checkpoint_stall_share"]
    measured = statistics.fmean(r["measured"]["checkpoint_stall_share"] for r in cut)
    fix = study.cheapest_change(cut[0])
    assert fix is not None
    fixed = [study.simulate(spec, cluster, runner.RunConfig(seed=s, days=30.0, policy="reactive"), fix) for s in seeds]
    cap = fixed[0]["plan"]["target"]["max_checkpoint_overhead"]
    after = statistics.fmean(r["measured"]["checkpoint_stall_share"] for r in fixed)
    print(
        f"tier cut to 80 TB ({len(seeds)} seeds): measured stall {measured:.3%} vs plan {planned:.3%} "
        f"({100 * (measured - planned) / planned:+.1f}% relative, target within 20%)"
    )
    ettr_after = statistics.fmean(r["measured"]["ettr"] for r in fixed)
    tier_usd = study.monthly_usd(fixed[0])["performance_tier"] - study.monthly_usd(cut[0])["performance_tier"]
    lost_usd = statistics.fmean(
        study.monthly_usd(b)["lost_gpu_time"] - study.monthly_usd(a)["lost_gpu_time"]
        for a, b in zip(cut, fixed, strict=True)
    )
    print(
        f"  plan's fix ({', '.join(fix.describe())}): measured stall {after:.3%} (cap {cap:.1%}), ETTR "
        f"{ettr_after:.4%} (plan {fixed[0]['comparison']['planned_ettr']:.4%}); price: performance tier "
        f"{tier_usd:+,.0f} $/month, lost GPU time {lost_usd:+,.0f} $/month"
    )


def _health(results: dict[str, dict]) -> None:  # type: ignore[type-arg]
    from velyrix.ops.study import evaluation

    r, p = results["reactive"], results["proactive"]
    diff = 100.0 * (p["measured_ettr_mean"] - r["measured_ettr_mean"])
    lost_r = 1.0 - r["measured_ettr_mean"]
    lost_p = 1.0 - p["measured_ettr_mean"]
    print(
        f"proactive vs reactive, same {SEEDS} seeds: ETTR {diff:+.3f} points; GPU time lost "
        f"{100 * (lost_r - lost_p) / lost_r:.1f}% less ({lost_r:.4%} -> {lost_p:.4%} of wall time)"
    )
    start = time.perf_counter()
    cfg = evaluation.EvalConfig(days=30.0, nodes=68, seed=1, checkpoint_interval_h=0.5, restart_h=426.0 / 3600.0)
    ev = evaluation.evaluate(cfg)
    er, ep = ev["policies"]["reactive"], ev["policies"]["proactive"]
    print(
        f"offline health evaluate (30 days, 68 nodes, seed 1, 0.5 h checkpoints; {time.perf_counter() - start:.1f} s): "
        f"GPU-hours lost reactive {er['gpu_hours_lost']:,.0f}, proactive {ep['gpu_hours_lost']:,.0f} "
        f"({100 * (er['gpu_hours_lost'] - ep['gpu_hours_lost']) / er['gpu_hours_lost']:.1f}% less); "
        f"precursor interruptions {ev['proactive_vs_reactive']['precursor_interruption_reduction_pct']}% fewer"
    )


def main() -> None:
    spec = loader.load(ACME).clusters[0]
    cluster = clusters.from_spec(spec)
    _long_run(spec, cluster)
    results = _seeds(spec, cluster)
    _tier_cut(spec, cluster)
    _health(results)


if __name__ == "__main__":
    main()
