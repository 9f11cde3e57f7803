"""The seeded Monte Carlo simulation of a training run's goodput (numpy, imported only when a simulation runs).

``goodput.simulate_ettr`` is this module's; ``goodput_expected.expected_ettr`` is the closed form of its mean.
"""

from __future__ import annotations

import math

from velyrix import errors
from velyrix.frozen import frozen

Z_95 = 1.959963984540054
"""Two-sided 95% normal quantile for the simulated confidence interval."""

RUN_INTERVAL_PCT = (0.5, 99.5)
"""Percentiles of single simulated runs that bound the per-run interval: 99% of runs of the horizon land
inside it (the confidence interval above is that of the mean over all replicas, far narrower)."""


def positive(name: str, value: float, *, allow_zero: bool = False, hint: str | None = None) -> float:
    ok = value is not None and math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        expected = ">= 0" if allow_zero else "> 0"
        raise errors.InvalidInputError(f"{name} must be a finite number {expected}, got {value!r}", hint=hint)
    return float(value)


def percentile_linear(ranked: list[float], pct: float) -> float:
    """The ``pct`` percentile (0-100) of the ascending ``ranked`` values, by linear interpolation between
    the closest ranks: the same float operations as ``numpy.percentile``'s default method, so the same
    result to the bit (tests/planners/test_goodput.py), without importing ``numpy.ma`` as it does."""
    n = len(ranked)
    virtual = (n - 1) * (pct / 100.0)
    if virtual >= n - 1:
        return ranked[-1]
    below = max(0, math.floor(virtual))
    gamma = virtual - below
    a, b = ranked[below], ranked[below + 1]
    diff = b - a
    return b - diff * (1.0 - gamma) if gamma >= 0.5 else a + diff * gamma


@frozen
class Simulation:
    """Result of the Monte Carlo run: mean ETTR, its 95% interval, failures per replica."""

    replicas: int
    horizon_s: float
    seed: int
    ettr_mean: float
    ettr_ci: tuple[float, float]
    ettr_std: float
    failures_mean: float
    ettr_run_interval: tuple[float, float] = (0.0, 1.0)
    """Where a single run of ``horizon_s`` lands: the ``RUN_INTERVAL_PCT`` percentiles of the replicas."""


def simulate_ettr(
    interval_s: float,
    save_s: float,
    restart_s: float,
    mtti_s: float,
    *,
    horizon_s: float,
    replicas: int = 2000,
    seed: int = 0,
    planned_share: float = 0.0,
    planned_restart_s: float | None = None,
) -> Simulation:
    """Simulate ``replicas`` runs of ``horizon_s`` wall seconds with Poisson interruptions (mean gap
    ``mtti_s``); each run cycles T compute + delta save, and after each interruption pays R and
    resumes from the last completed save. A failure during a restart starts the restart again.
    With ``planned_share`` > 0 that share of the interruptions is caught beforehand (proactive health): the
    job stops at a checkpoint (its work is kept) and pays ``planned_restart_s`` instead of R.

    Vectorized over replicas and interruptions (numpy, seeded). Returns the mean ETTR (useful compute
    / wall time) with a normal 95% confidence interval.
    """
    import numpy as np

    positive("checkpoint interval", interval_s)
    positive("save seconds", save_s, allow_zero=True)
    positive("restart seconds", restart_s, allow_zero=True)
    positive("MTTI", mtti_s)
    positive("horizon", horizon_s)
    if not isinstance(replicas, int) or replicas < 2:
        raise errors.InvalidInputError(f"replicas must be a whole number >= 2, got {replicas!r}")
    if not 0.0 <= planned_share <= 1.0:
        raise errors.InvalidInputError(f"planned share must be within [0, 1], got {planned_share!r}")
    rng = np.random.default_rng(seed)
    cycle = interval_s + save_s
    expected = horizon_s / mtti_s
    k = int(expected + 6.0 * math.sqrt(expected) + 16)
    ettr = np.empty(replicas)
    failures = np.empty(replicas)
    chunk = max(1, min(replicas, 1_000_000 // k))  # bound memory: ~8 MB per array
    for lo in range(0, replicas, chunk):
        n = min(chunk, replicas - lo)
        gaps = rng.exponential(mtti_s, size=(n, k))
        ends = np.cumsum(gaps, axis=1)
        while ends[:, -1].min() < horizon_s:  # rare: some replica needs more interruptions
            more = rng.exponential(mtti_s, size=(n, k))
            gaps = np.concatenate([gaps, more], axis=1)
            ends = np.cumsum(gaps, axis=1)
        width = gaps.shape[1]
        planned = rng.random(size=gaps.shape) < planned_share if planned_share > 0 else np.zeros(gaps.shape, bool)
        starts = ends - gaps
        # Only the first ``cols`` segments start inside the horizon for some replica (a prefix: starts grow
        # along a row); the later ones add exactly 0.0, so they are left at 0.0 and not computed.
        cols = int(np.count_nonzero((starts < horizon_s).any(axis=0)))
        gaps, ends, starts, planned = gaps[:, :cols], ends[:, :cols], starts[:, :cols], planned[:, :cols]
        # Length of each segment inside the horizon (0 for segments that start after it).
        length = np.clip(np.minimum(gaps, horizon_s - starts), 0.0, None)
        ended_by_failure = ends <= horizon_s
        # Every segment but the first starts with a restart after an interruption.
        run = length
        restarts = np.where(planned[:, :-1], restart_s if planned_restart_s is None else planned_restart_s, restart_s)
        run[:, 1:] = np.clip(length[:, 1:] - restarts, 0.0, None)
        cycles = np.floor(run / cycle)
        # The segment cut by the horizon keeps its in-progress compute (the job ends there, it does
        # not crash), and so does one stopped at a checkpoint by a planned drain; segments ended by a
        # failure keep only completed saves.
        keeps = ~ended_by_failure | planned
        partial = np.where(keeps, np.minimum(run - cycles * cycle, interval_s), 0.0)
        useful = np.zeros((n, width))  # summed over every segment, as drawn: the same float sums to the bit
        useful[:, :cols] = cycles * interval_s + partial
        ettr[lo : lo + n] = useful.sum(axis=1) / horizon_s
        failures[lo : lo + n] = ended_by_failure.sum(axis=1)
    mean = float(ettr.mean())
    std = float(ettr.std(ddof=1))
    half = Z_95 * std / math.sqrt(replicas)
    ranked = np.sort(ettr).tolist()
    lo_run, hi_run = (percentile_linear(ranked, pct) for pct in RUN_INTERVAL_PCT)
    return Simulation(
        replicas=replicas,
        horizon_s=horizon_s,
        seed=seed,
        ettr_mean=mean,
        ettr_ci=(mean - half, mean + half),
        ettr_std=std,
        failures_mean=float(failures.mean()),
        ettr_run_interval=(lo_run, hi_run),
    )
