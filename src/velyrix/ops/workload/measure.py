"""Figures of a run measured from its simulated events, and their comparison with the plan.

``figures`` reads only the run (its wall-time buckets, work, saves and failures). ``compare`` puts them
beside the plan's goodput section (``velyrix plan --json``: ``resources[].goodput``; its ``proactive`` figures
for a run under proactive health) and splits the ETTR difference by cause, in the first-order model's own
terms (ETTR = 1 - save share - R/M - (T/2)/M).
"""

from __future__ import annotations

import statistics
from typing import Any

from velyrix import catalog
from velyrix.ops.workload.runner import Run


def figures(run: Run) -> dict[str, Any]:
    """ETTR (useful work / wall time), stall shares and counts of ``run``. Shares are of wall time."""
    st, h = run.state, run.horizon_s
    crashes = [f for f in run.failures if f["kind"] == "fault" and f["in_job"] and "lost_work_s" in f]
    slowdowns = [f for f in run.failures if f["kind"] == "fault" and f["in_job"] and "slowed_to" in f]
    caught = [d for d in run.drains if d["in_job"] and d["precursor"]]
    saves = [e for e in st.log if e["kind"] == "save"]
    restarts = [e for e in st.log if e["kind"] == "restart"]
    useful = st.finish()
    buckets = {
        "useful_work": useful / h,
        "checkpoint_stall": st.wall["checkpoint_stall"] / h,
        "restart": st.wall["restart"] / h,
        "spare_wait": st.wall["spare_wait"] / h,
        "lost_work": st.lost / h,
        "slowdown": st.slowed / h,
        "data_stall": st.data_stalled / h,
    }
    return {
        "ettr": useful / h,
        "checkpoint_stall_share": buckets["checkpoint_stall"],
        "data_stall_share": buckets["data_stall"],
        "wall_shares": buckets,
        "horizon_s": h,
        "useful_work_s": useful,
        "lost_work_s": st.lost,
        "steps_kept": int(useful // run.job.step_time_s),
        "steps_lost": int(st.lost // run.job.step_time_s),
        "saves_complete": st.saves,
        "save_blocked_s_mean": statistics.fmean(e["blocked_s"] for e in saves) if saves else 0.0,
        "job_interruptions": len(crashes),
        "lost_work_s_per_interruption": statistics.fmean(f["lost_work_s"] for f in crashes) if crashes else 0.0,
        "slowdowns": len(slowdowns),
        "caught_before_failure": len(caught),
        "restarts": len(restarts),
        "restart_s_mean": statistics.fmean(e["s"] for e in restarts) if restarts else 0.0,
        "replacements": sum(1 for e in st.log if e["kind"] == "replacement"),
        "stops": sum(1 for e in st.log if e["kind"] == "stop"),
        "by_cause": _count(f["cause"] or "injected" for f in crashes),
        "caught_by_cause": _count(_cause_of(run, d) for d in caught),
    }


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def _cause_of(run: Run, drain: dict[str, Any]) -> str:
    """The cause of the precursor that was running on a drained node (the latest before the drain)."""
    before = [
        f for f in run.failures if f["kind"] == "precursor" and f["host"] == drain["host"] and f["t_s"] <= drain["t_s"]
    ]
    return str(before[-1]["cause"]) if before else "unknown"


def planned_shares(goodput: dict[str, Any], policy: str = "reactive") -> dict[str, float]:
    """The plan's first-order split of wall time: save share, restart R/M, lost work (T/2)/M; under
    ``proactive`` health the plan's caught share of interruptions skips detection and loses no work."""
    t, d, r, m = goodput["interval_s"], goodput["save_s"], goodput["restart_s"], goodput["mttf_h"] * 3600.0
    caught = _caught(goodput, policy)
    detect = min(r, float(catalog.load_toml("checkpointing.toml")["restart"]["detect_s"]))
    return {
        "checkpoint_stall": d / (t + d),
        "restart": (r - caught * detect) / m,
        "lost_work": (1 - caught) * t / 2 / m,
    }


def _caught(goodput: dict[str, Any], policy: str) -> float:
    pro = goodput.get("proactive") or {}
    return float(pro.get("caught_share", 0.0)) if policy == "proactive" else 0.0


def _planned(goodput: dict[str, Any], policy: str) -> tuple[float, list[float], str]:
    """(ETTR, per-run interval, model) of the plan for a run under ``policy``."""
    pro = goodput.get("proactive") or {}
    if policy == "proactive" and pro:
        return pro["ettr"], list(pro["ettr_run_interval"]), "proactive health (precursor failures caught)"
    interval = goodput.get("ettr_run_interval", goodput["ettr_simulated_ci"])
    return goodput["ettr"], list(interval), "every failure interrupts (reactive)"


def compare(fig: dict[str, Any], goodput: dict[str, Any], policy: str = "reactive") -> dict[str, Any]:
    """The measurement beside the plan's prediction for the run's health ``policy``, with the reasons for
    the difference (percentage points of wall time, plan minus measurement: positive means the twin lost
    less than planned)."""
    plan = planned_shares(goodput, policy)
    ettr, (lo, hi), model = _planned(goodput, policy)
    ws = fig["wall_shares"]
    measured = {
        "checkpoint_stall": ws["checkpoint_stall"],
        "restart": ws["restart"] + ws["spare_wait"],
        "lost_work": ws["lost_work"] + ws["slowdown"] + ws["data_stall"],
    }
    expected_interruptions = fig["horizon_s"] / (goodput["mttf_h"] * 3600.0) * (1.0 - _caught(goodput, policy))
    return {
        "planned_model": model,
        "planned_ettr": ettr,
        "planned_ettr_reactive": goodput["ettr"],
        "planned_run_interval": [lo, hi],
        "measured_ettr": fig["ettr"],
        "ettr_difference_points": 100.0 * (fig["ettr"] - ettr),
        # the interval is that of runs as long as the plan's (30 days): other lengths spread differently
        "plan_run_days": goodput["simulation"]["horizon_s"] / 86400.0 if "simulation" in goodput else None,
        "inside_run_interval": (lo <= fig["ettr"] <= hi) if _same_length(fig, goodput) else None,
        "planned_checkpoint_stall_share": plan["checkpoint_stall"],
        "measured_checkpoint_stall_share": fig["checkpoint_stall_share"],
        "stall_difference_points": 100.0 * (fig["checkpoint_stall_share"] - plan["checkpoint_stall"]),
        "by_cause_points": {k: 100.0 * (plan[k] - measured[k]) for k in plan},
        "explanation": explain(fig, goodput, expected_interruptions),
    }


def _same_length(fig: dict[str, Any], goodput: dict[str, Any]) -> bool:
    sim = goodput.get("simulation")
    return sim is None or abs(sim["horizon_s"] - fig["horizon_s"]) < 1.0


def explain(fig: dict[str, Any], goodput: dict[str, Any], expected: float) -> list[str]:
    """Sentences naming which failures and which stalls made the measurement differ from the plan."""
    out = [
        f"failures: {fig['job_interruptions']} interruptions of the job in {fig['horizon_s'] / 86400:g} days "
        f"(the plan expects {expected:.1f}: an MTTI of {goodput['mttf_h']:.1f} h, less those caught on precursors); "
        f"{fig['lost_work_s_per_interruption']:,.0f} s of work lost per interruption "
        f"(the plan: half the interval, {goodput['interval_s'] / 2:,.0f} s)",
        f"saves: {fig['saves_complete']} complete, blocking {fig['save_blocked_s_mean']:.1f} s on average "
        f"(the plan: {goodput['save_s']:.1f} s at the tier's low-percentile bandwidth)",
    ]
    if fig["by_cause"]:
        out.append("interruptions by cause: " + ", ".join(f"{k} {v}" for k, v in fig["by_cause"].items()))
    if fig["caught_by_cause"]:
        out.append("caught on precursors: " + ", ".join(f"{k} {v}" for k, v in fig["caught_by_cause"].items()))
    if fig["restarts"]:
        out.append(
            f"restarts: {fig['restarts']}, {fig['restart_s_mean']:,.0f} s on average "
            f"(the plan: {goodput['restart_s']:,.0f} s, detect + reschedule + reload)"
        )
    if fig["caught_before_failure"]:
        out.append(
            f"health: {fig['caught_before_failure']} failing nodes drained on their precursors before they "
            "failed (a planned restart, no lost work)"
        )
    ws = fig["wall_shares"]
    if ws["spare_wait"] > 0:
        out.append(f"spares: the job waited {100 * ws['spare_wait']:.2f}% of the time for a replacement node")
    if ws["slowdown"] > 0:
        out.append(f"slow nodes: {fig['slowdowns']} slowed the job ({100 * ws['slowdown']:.3f}% of the time)")
    if ws["data_stall"] > 0:
        out.append(f"data reads: the tier could not feed the job {100 * ws['data_stall']:.3f}% of the time")
    return out
