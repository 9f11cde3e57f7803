"""GPU-hours busy from telemetry: per-job busy GPU-seconds from Prometheus (the agents' DCGM metrics).

A GPU-second is busy in proportion to its utilization: ``DCGM_FI_DEV_GPU_UTIL / 100`` sampled every
``step_s`` seconds over the period and summed per ``hpc_job`` label (the job id the Slurm prolog writes
into the job-mapping directory that the agent reads), times ``step_s``.
"""

from __future__ import annotations

import math

import httpx

from velyrix import errors

UTIL_METRIC = "DCGM_FI_DEV_GPU_UTIL"


def busy_query(t_from: float, t_to: float, step_s: float, metric: str = UTIL_METRIC) -> str:
    """The PromQL expression (evaluated at ``t_to``) of busy GPU-seconds per ``hpc_job`` in [t_from, t_to)."""
    range_s = max(int(math.ceil(t_to - t_from)), 1)
    step_ms = max(int(step_s * 1000), 1)
    return (
        f'sum by (hpc_job) (sum_over_time(({metric}{{hpc_job!=""}} / 100)[{range_s}s:{step_ms}ms])) * {step_ms / 1000}'
    )


def busy_gpu_seconds(
    prometheus_url: str,
    t_from: float,
    t_to: float,
    *,
    step_s: float = 60.0,
    metric: str = UTIL_METRIC,
    timeout_s: float = 30.0,
) -> dict[int, float]:
    """Busy GPU-seconds per Slurm job id in [t_from, t_to), from Prometheus at ``prometheus_url``.

    ``step_s``: sampling step of the subquery (the scrape interval or coarser). Jobs whose label is not a
    number (Kubernetes pods) are left out."""
    url = prometheus_url.rstrip("/") + "/api/v1/query"
    try:
        resp = httpx.get(
            url, params={"query": busy_query(t_from, t_to, step_s, metric), "time": t_to}, timeout=timeout_s
        )
        resp.raise_for_status()
        body = resp.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise errors.ExternalToolError(
            f"Prometheus query failed at {prometheus_url}: {exc}",
            hint="--busy-from takes the Prometheus base URL (http://prom:9090)",
        ) from None
    if body.get("status") != "success":
        raise errors.ExternalToolError(f"Prometheus answered {body.get('error') or body.get('status')}")
    out: dict[int, float] = {}
    for r in body["data"]["result"]:
        job = r["metric"].get("hpc_job", "")
        if job.isdigit():
            out[int(job)] = float(r["value"][1])
    return out
