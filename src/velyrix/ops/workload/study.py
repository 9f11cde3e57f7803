"""Runs of a declared workload on the twin beside its plan: one run, many seeds, and what-if pairs.

``simulate`` runs one seed and compares it with the plan of the same (possibly changed) declaration;
``what_if`` runs the same seed twice, as declared and changed, and prices the measured difference (the
performance tier at the catalog's price, lost GPU time at the node type's GPU-hour price);
``over_seeds`` summarises many seeds against the plan's mean and per-run interval.
"""

from __future__ import annotations

import statistics
from typing import Any

from velyrix import catalog, units
from velyrix.declarations import models
from velyrix.ops.scheduler.clusters import SchedulerCluster
from velyrix.ops.workload import measure, runner
from velyrix.ops.workload.job import Overrides, job_from
from velyrix.planners import plan as planner


def plan_of(spec: models.ClusterSpec) -> dict[str, Any]:
    """The plan of ``spec`` (``velyrix plan --json``'s resource)."""
    return planner.plan_cluster(spec)


def simulate(
    spec: models.ClusterSpec,
    cluster: SchedulerCluster,
    config: runner.RunConfig,
    overrides: Overrides | None = None,
) -> dict[str, Any]:
    """One run of ``spec`` (changed by ``overrides``) on the twin: the figures, the comparison with the plan
    of that declaration, the timeline and the run itself (key ``run``, not JSON)."""
    changed = (overrides or Overrides()).apply(spec)
    plan = plan_of(changed)
    plane = plan["fabric_plan"].get("storage_plane", {}).get("deliverable_gb_s")
    job = job_from(changed, storage_plane_gb_s=plane)
    result = runner.run(job, cluster, config)
    fig = measure.figures(result)
    out: dict[str, Any] = {
        "cluster": spec.name,
        "training_job": f"{spec.name}/seed-{config.seed}",
        "scheduler": result.scheduler,
        "nodes": cluster.node_names[: job.nodes],
        "config": {"seed": config.seed, "days": config.days, "policy": config.policy},
        "changes": (overrides or Overrides()).describe(),
        "job": job.to_dict(),
        "measured": fig,
        "timeline": {"events": result.state.log, "failures": result.failures, "drains": result.drains},
        "run": result,
    }
    if plan.get("goodput"):
        out["plan"] = {
            "goodput": {k: v for k, v in plan["goodput"].items() if k != "sensitivity"},
            "change": plan["storage_plan"].get("change", []),
            "cheapest": plan["storage_plan"].get("cheapest"),
            "meets_target": plan["storage_plan"].get("meets_target"),
            "target": plan["storage_plan"].get("target"),
        }
        out["comparison"] = measure.compare(fig, plan["goodput"], config.policy)
    return out


def cheapest_change(result: dict[str, Any]) -> Overrides | None:
    """The plan's recommended change of a ``simulate`` result, as ``Overrides`` (None when it has none)."""
    best = (result.get("plan") or {}).get("cheapest")
    if not best:
        return None
    return Overrides(interval_s=best["interval_s"], mode=best["mode"], parallel_fs_tb=best["capacity_tb"])


def monthly_usd(result: dict[str, Any]) -> dict[str, float]:
    """What a run's configuration costs a month: the performance tier, and the GPU time its measured ETTR
    loses (GPUs x hours per month x (1 - ETTR) x GPU-hour price)."""
    job = result["job"]
    tier = catalog.storage_tier("parallel_fs").price_usd_per_tb_month * job["parallel_fs_tb"]
    lost = job["gpus"] * units.HOURS_PER_MONTH * (1.0 - result["measured"]["ettr"])
    lost_usd = lost * catalog.gpu_hour_price_usd(job["node_type"])
    return {"performance_tier": tier, "lost_gpu_time": lost_usd, "total": tier + lost_usd}


def what_if(base: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """Two ``simulate`` results of the same seed (as declared, and changed): the variant's measurement, the
    plan's for it, and the measured difference, priced."""
    pb, po = monthly_usd(base), monthly_usd(variant)
    mb, mo = base["measured"], variant["measured"]
    return {
        "seed": base["config"]["seed"],
        "changes": variant["changes"],
        "measured": {"ettr": mo["ettr"], "checkpoint_stall_share": mo["checkpoint_stall_share"]},
        "planned": variant.get("comparison", {}),
        "difference": {
            "ettr_points": 100.0 * (mo["ettr"] - mb["ettr"]),
            "checkpoint_stall_points": 100.0 * (mo["checkpoint_stall_share"] - mb["checkpoint_stall_share"]),
            "usd_per_month": {k: po[k] - pb[k] for k in pb},
        },
        "price_usd_per_month": {"baseline": pb, "variant": po},
    }


def over_seeds(
    spec: models.ClusterSpec, cluster: SchedulerCluster, seeds: list[int], *, days: float, policy: str
) -> dict[str, Any]:
    """Runs of ``seeds`` against the plan: mean ETTR and stall share, and how many seeds fall inside the
    plan's per-run interval."""
    rows = []
    for seed in seeds:
        r = simulate(spec, cluster, runner.RunConfig(seed=seed, days=days, policy=policy))
        c = r["comparison"]
        rows.append(
            {
                "seed": seed,
                "ettr": c["measured_ettr"],
                "stall": c["measured_checkpoint_stall_share"],
                "inside": bool(c["inside_run_interval"]),
                "interruptions": r["measured"]["job_interruptions"],
                "caught": r["measured"]["caught_before_failure"],
            }
        )
    c0 = r["comparison"]
    mean = statistics.fmean(x["ettr"] for x in rows)
    stall = statistics.fmean(x["stall"] for x in rows)
    return {
        "seeds": len(rows),
        "days": days,
        "policy": policy,
        "planned_ettr": c0["planned_ettr"],
        "planned_run_interval": c0["planned_run_interval"],
        "planned_checkpoint_stall_share": c0["planned_checkpoint_stall_share"],
        "measured_ettr_mean": mean,
        "ettr_difference_points": 100.0 * (mean - c0["planned_ettr"]),
        "inside_run_interval": sum(x["inside"] for x in rows),
        "measured_checkpoint_stall_mean": stall,
        "stall_difference_points": 100.0 * (stall - c0["planned_checkpoint_stall_share"]),
        "runs": rows,
    }
