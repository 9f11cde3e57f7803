"""Does proactive health save jobs? Run the twin for a simulated period under three policies.

The twin (``velyrix.fleet.drivers.sim``) produces failures at the catalog's published rate and cause mix;
causes flagged ``precursor`` first run their precursor trend for the twin's precursor window (rising
single-bit ECC before a DBE, remaps before a remap failure, link errors before a link drops, temperature
before a thermal trip, media errors before a slow disk). Benign noise (application XIDs, one-off
single-bit storms) is added at rates below. Jobs are an alternating busy/idle process per node.

Policies:
- ``none``: nobody acts on health signals; a broken node is noticed by a person after ``notice_h`` and
  every job that starts on it meanwhile crashes.
- ``reactive``: after a failure (a fatal XID or a dead GPU/link/disk) the node is drained at the next poll
  and repaired; precursors are ignored.
- ``proactive``: the Velyrix engine judges every changed node at each poll (the agent's path: twin node ->
  NodeSample -> evidence -> verdict). DRAIN_AFTER_JOB leaves the node at the end of the job or at its next
  checkpoint (the job is requeued onto a spare), whichever comes first; DRAIN_NOW and up leave now.

A failure is "caught before job damage" when the node left service before the failure fired. Figures
marked "assumption" in ``EvalConfig`` are Velyrix design values, not published measurements.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from velyrix import errors
from velyrix.ops.study.simulation import PolicyRun
from velyrix.ops.study.workload import POLICIES, EvalConfig, H, Jobs

__all__ = ["H", "POLICIES", "EvalConfig", "Jobs", "evaluate", "run_policy"]


def run_policy(policy: str, cfg: EvalConfig) -> dict[str, Any]:
    """Simulate ``cfg`` under ``policy`` (none, reactive, proactive); returns its figures."""
    if policy not in POLICIES:
        raise errors.UnknownNameError("policy", policy, POLICIES)
    return PolicyRun(policy, cfg).run()


def evaluate(cfg: EvalConfig, workers: int = 1) -> dict[str, Any]:
    """All three policies on the same twin seed (one process each with ``workers`` > 1), plus the
    proactive-vs-reactive comparison."""
    cfg.validate()
    if workers > 1:
        import concurrent.futures

        with concurrent.futures.ProcessPoolExecutor(max_workers=min(workers, len(POLICIES))) as pool:
            results = dict(zip(POLICIES, pool.map(run_policy, POLICIES, [cfg] * len(POLICIES)), strict=True))
    else:
        results = {p: run_policy(p, cfg) for p in POLICIES}
    r, p = results["reactive"], results["proactive"]
    base = r["precursor_job_interruptions"]
    return {
        "config": {k: v for k, v in asdict(cfg).items() if k != "job_nodes"},
        "fault_process": "velyrix.fleet.drivers.sim (SimRegion spontaneous faults at catalog failure rates)",
        "policies": results,
        "proactive_vs_reactive": {
            "precursor_interruption_reduction_pct": round(100.0 * (base - p["precursor_job_interruptions"]) / base, 1)
            if base
            else 0.0,
            "all_interruption_reduction_pct": round(
                100.0 * (r["job_interruptions"] - p["job_interruptions"]) / r["job_interruptions"], 1
            )
            if r["job_interruptions"]
            else 0.0,
        },
    }
