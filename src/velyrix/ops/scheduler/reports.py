"""Utilization reports per team (Slurm account) and per cost center for a period.

``build(jobs, t_from, t_to, ...)`` aggregates a ``JobTable``: GPU-hours allocated (each job's GPUs times
its run time inside the period), GPU-hours busy (from telemetry, when given as busy GPU-seconds per
job), jobs, wait times (mean and 95th percentile of start - submit for jobs started in the period),
fair-share standing (``sshare``) and top users. The result is plain JSON-able data; ``report_formats``
renders it as a table, CSV, JSON or HTML with charts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np

from velyrix.ops.scheduler import accounting


def _hours(seconds: float) -> float:
    return round(float(seconds) / 3600.0, 6)


def _unique(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values (sort-based: numpy's hash-based ``unique`` is several times slower here)."""
    s = np.sort(a)
    if s.size == 0:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def _distinct_jobs(codes: np.ndarray, job_id: np.ndarray, counted: np.ndarray, n: int) -> np.ndarray:
    """Jobs per group, a requeued job (several runs) counted once."""
    if not counted.any():
        return np.zeros(n)
    # One int64 key per (group, job): job ids stay below 2**40 (Slurm's are 32-bit).
    keys = _unique((codes[counted].astype(np.int64) << 40) | job_id[counted])
    return np.bincount(keys >> 40, minlength=n).astype(float)


def _group(
    codes: np.ndarray,
    n: int,
    gpu_s: np.ndarray,
    busy_s: np.ndarray | None,
    counted: np.ndarray,
    waits: np.ndarray,
    started_in: np.ndarray,
    job_id: np.ndarray,
) -> list[dict[str, Any]]:
    alloc = np.bincount(codes, weights=gpu_s, minlength=n)
    busy = np.bincount(codes, weights=busy_s, minlength=n) if busy_s is not None else None
    jobs = _distinct_jobs(codes, job_id, counted, n)
    out = []
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n + 1))
    for k in range(n):
        idx = order[bounds[k] : bounds[k + 1]]
        w = waits[idx][started_in[idx]]
        w = w[~np.isnan(w)]
        row: dict[str, Any] = {
            "gpu_hours": _hours(alloc[k]),
            "busy_gpu_hours": _hours(busy[k]) if busy is not None else None,
            "utilization": round(float(busy[k] / alloc[k]), 4) if busy is not None and alloc[k] > 0 else None,
            "jobs": int(jobs[k]),
            "wait_mean_s": round(float(w.mean()), 1) if w.size else None,
            "wait_p95_s": round(float(np.percentile(w, 95)), 1) if w.size else None,
        }
        out.append(row)
    return out


def build(
    jobs: accounting.JobTable,
    t_from: int,
    t_to: int,
    *,
    cost_center_of: dict[str, str] | None = None,
    shares: list[accounting.ShareRow] | None = None,
    busy_gpu_s: dict[int, float] | None = None,
    top_n: int = 10,
    now: float | None = None,
    cluster: str | None = None,
) -> dict[str, Any]:
    """The report as data. Inputs: jobs, the period [t_from, t_to) in UNIX seconds, account → cost center,
    sshare rows (fair-share standing), busy GPU-seconds per job id (telemetry), how many top users."""
    cost_center_of = cost_center_of or {}
    gpu_s = jobs.gpu_seconds(t_from, t_to, now)
    counted = (gpu_s > 0) | ((jobs.submit >= t_from) & (jobs.submit < t_to))
    started_in = (jobs.start >= t_from) & (jobs.start < t_to) & (jobs.start > 0)
    waits = jobs.wait_seconds()
    busy_s = None
    if busy_gpu_s is not None:
        ids = np.fromiter(busy_gpu_s.keys(), dtype=np.int64, count=len(busy_gpu_s))
        vals = np.fromiter(busy_gpu_s.values(), dtype=float, count=len(busy_gpu_s))
        sorter = np.argsort(ids)
        pos = np.clip(np.searchsorted(ids, jobs.job_id, sorter=sorter), 0, max(len(ids) - 1, 0))
        hit = ids[sorter[pos]] == jobs.job_id if len(ids) else np.zeros(len(jobs), bool)
        per_job = np.where(hit, vals[sorter[pos]] if len(ids) else 0.0, 0.0)
        # A requeued job has several runs: share its busy seconds among them by allocated seconds.
        order = np.argsort(jobs.job_id, kind="stable")
        sorted_ids = jobs.job_id[order]
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        sums = np.add.reduceat(gpu_s[order].astype(float), starts) if len(order) else np.zeros(0)
        alloc_of_job = np.empty(len(order))
        alloc_of_job[order] = np.repeat(sums, np.diff(np.r_[starts, len(order)]))
        busy_s = np.where(alloc_of_job > 0, per_job * gpu_s / np.where(alloc_of_job > 0, alloc_of_job, 1.0), 0.0)
        busy_s = np.minimum(busy_s, gpu_s)  # telemetry cannot exceed what was allocated in the period

    teams = _group(jobs.account, len(jobs.accounts), gpu_s, busy_s, counted, waits, started_in, jobs.job_id)
    team_rows = []
    standing = _standing(shares)
    for name, row in zip(jobs.accounts, teams, strict=True):
        if row["jobs"] == 0 and row["gpu_hours"] == 0:
            continue
        team_rows.append(
            {"team": name, "cost_center": cost_center_of.get(name, name), **row, "fairshare": standing.get(name)}
        )
    team_rows.sort(key=lambda r: -r["gpu_hours"])

    cc_names = sorted({cost_center_of.get(a, a) for a in jobs.accounts})
    cc_index = {c: i for i, c in enumerate(cc_names)}
    acct_to_cc = np.array([cc_index[cost_center_of.get(a, a)] for a in jobs.accounts] or [0], dtype=np.int64)
    cc_codes = acct_to_cc[jobs.account] if len(jobs) else np.zeros(0, dtype=np.int64)
    cc_rows = [
        {"cost_center": c, **row}
        for c, row in zip(
            cc_names,
            _group(cc_codes, len(cc_names), gpu_s, busy_s, counted, waits, started_in, jobs.job_id),
            strict=True,
        )
        if row["jobs"] or row["gpu_hours"]
    ]
    cc_rows.sort(key=lambda r: -r["gpu_hours"])

    user_alloc = np.bincount(jobs.user, weights=gpu_s, minlength=len(jobs.users))
    user_jobs = _distinct_jobs(jobs.user, jobs.job_id, counted, len(jobs.users))
    top = np.argsort(-user_alloc, kind="stable")[:top_n]
    top_users = [
        {"user": jobs.users[i], "gpu_hours": _hours(user_alloc[i]), "jobs": int(user_jobs[i])}
        for i in top
        if user_jobs[i] or user_alloc[i]
    ]

    total_alloc = float(gpu_s.sum())
    return {
        "cluster": cluster,
        "period": {"from": _iso(t_from), "to": _iso(t_to), "seconds": int(t_to - t_from)},
        "totals": {
            "gpu_hours": _hours(total_alloc),
            "busy_gpu_hours": _hours(busy_s.sum()) if busy_s is not None else None,
            "jobs": int(_unique(jobs.job_id[counted]).size),
            "users": int((user_jobs > 0).sum()),
        },
        "teams": team_rows,
        "cost_centers": cc_rows,
        "top_users": top_users,
        "fairshare": [
            {
                "account": s.account,
                "user": s.user,
                "fairshare": s.fairshare,
                "level_fs": s.level_fs,
                "norm_shares": s.norm_shares,
                "raw_usage": s.raw_usage,
            }
            for s in (shares or [])
        ],
    }


def _standing(shares: list[accounting.ShareRow] | None) -> dict[str, float | None]:
    """Account → its level fair-share (LevelFS of the account row)."""
    return {s.account: s.level_fs for s in shares or [] if not s.user}


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")
