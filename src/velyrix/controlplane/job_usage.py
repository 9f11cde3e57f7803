"""GPU time per job, metered from the node agents' reports (``job_usage``): each report closes the
interval since the node's previous one; the jobs that previous report named (``sample.jobs``: the node's
job mapping, docs/telemetry.md) held their GPUs for that interval (allocated GPU-seconds) and kept them busy
as the new report's GPU utilization says (busy GPU-seconds). A report is the node's claim: job ids must
match the agent's own pattern (``agent/jobs.py`` ``JOB_ID``), an interval counts only when it is positive and
at most ``MAX_INTERVAL_S`` (a node silent for longer is not metered across the gap), and the row goes to
the tenant the node is allocated to when the report arrives."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.usage import JobUsage

JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$")
"""The agent's job-id pattern (``velyrix/agent/jobs.py``; the control plane does not import the agent)."""
MAX_INTERVAL_S = 86400.0
"""Longest report interval metered (seconds of the sample clock): a day, the heartbeat of an unchanged node
under ``velyrix up --agent-step`` (``ops/twin_agents.py`` ``HEARTBEAT_S``); agents otherwise report every poll."""
MAX_JOBS = 64
FIELDS = ("user", "team", "cost_center", "account")


def _jobs(sample: Mapping[str, Any] | None) -> list[tuple[str, list[int], dict[str, str]]]:
    raw = (sample or {}).get("jobs")
    out = []
    for j in raw[:MAX_JOBS] if isinstance(raw, list) else ():
        job = j.get("hpc_job") if isinstance(j, Mapping) else None
        if isinstance(job, str) and JOB_ID.match(job):
            gpus = sorted({g for g in j.get("gpus") or () if isinstance(g, int) and 0 <= g < 1024})
            out.append((job, gpus, {k: str(j.get(k) or "")[:64] for k in FIELDS}))
    return out


def _busy(sample: Mapping[str, Any]) -> dict[int, float]:
    """GPU index -> utilization (0..1) of the report's sample."""
    out = {}
    for g in sample.get("gpus") or ():
        if isinstance(g, Mapping) and isinstance(g.get("index"), int):
            pct = g.get("utilization_pct")
            out[int(g["index"])] = min(1.0, max(0.0, float(pct) / 100.0)) if isinstance(pct, (int, float)) else 0.0
    return out


def meter(session: orm.Session, node: models.Node, previous: Any, report: Mapping[str, Any]) -> int:
    """Add the interval from ``previous`` (the node's stored last report, or None) to ``report`` to the jobs
    ``previous`` named; returns how many jobs were metered."""
    if previous is None or node.tenant_id is None:
        return 0
    start, end = float(previous.collected_at_s or 0.0), float(report.get("collected_at_s") or 0.0)
    interval = end - start
    jobs = _jobs(previous.sample)
    if not jobs or not 0.0 < interval <= MAX_INTERVAL_S:
        return 0
    busy = _busy(report.get("sample") or {})
    for job, gpus, info in jobs:
        row = session.scalar(
            sa.select(JobUsage).where(
                JobUsage.node_id == node.id, JobUsage.tenant_id == node.tenant_id, JobUsage.hpc_job == job
            )
        )
        if row is None:
            row = JobUsage(
                tenant_id=node.tenant_id,
                node_id=node.id,
                hpc_job=job,
                allocated_gpu_s=0.0,
                busy_gpu_s=0.0,
                first_s=start,
            )
            session.add(row)
        row.cluster_id = node.cluster_id
        for key, value in info.items():
            setattr(row, key, value)
        row.allocated_gpu_s = float(row.allocated_gpu_s or 0.0) + len(gpus) * interval
        row.busy_gpu_s = float(row.busy_gpu_s or 0.0) + sum(busy.get(g, 0.0) for g in gpus) * interval
        row.last_s = end
    return len(jobs)
