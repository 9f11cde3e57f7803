"""Grafana dashboards (fleet, cluster, job), generated from code so that every query uses a metric the
exporter emits or a rule in ``deploy/prometheus/velyrix-rules.yml`` records (a test checks it).
Each validates against Grafana's published dashboard schema, vendored in ``tests/agent/schemas``
(``tests/agent/test_dashboard_schema.py``).

Regenerate the checked-in JSON after a change::

    .venv/bin/python -m velyrix.agent.dashboards deploy/grafana
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DS = {"type": "prometheus", "uid": "${datasource}"}
GPU = 'Hostname=~"$node"'


@dataclass(frozen=True)
class Panel:
    """One panel: title, PromQL queries (expr, legend), Grafana unit and panel type."""

    title: str
    queries: tuple[tuple[str, str], ...]
    unit: str = "short"
    kind: str = "timeseries"
    width: int = 12
    height: int = 8
    description: str = ""


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    panels: tuple[Panel, ...]
    variables: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    tags: tuple[str, ...] = ("velyrix",)


def _var(name: str, query: str, label: str, multi: bool = True) -> dict[str, Any]:
    """A query variable with only the properties of Grafana's dashboard model (no ``definition``; an
    ``allValue`` only where "All" is offered)."""
    var: dict[str, Any] = {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DS,
        "query": {"query": query, "refId": f"{name}-var"},
        "refresh": 2,
        "multi": multi,
        "includeAll": multi,
        "sort": 1,
    }
    if multi:
        var["allValue"] = ".*"
    return var


ANNOTATIONS = {
    "list": [
        {
            "builtIn": 1,
            "datasource": {"type": "grafana", "uid": "-- Grafana --"},
            "enable": True,
            "hide": True,
            "iconColor": "rgba(0, 211, 255, 1)",
            "name": "Annotations & Alerts",
            "type": "dashboard",
        }
    ]
}
INPUTS = [  # grafana.com import asks for the Prometheus data source
    {
        "name": "DS_PROMETHEUS",
        "label": "Prometheus",
        "type": "datasource",
        "pluginId": "prometheus",
        "pluginName": "Prometheus",
    }
]


DATASOURCE_VAR = {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus"}
NODE_VAR = _var("node", "label_values(velyrix_node_up, Hostname)", "Nodes")
JOB_VAR = _var("job", "label_values(velyrix_job_info, hpc_job)", "Job", multi=False)

FLEET = Dashboard(
    "velyrix-fleet",
    "Velyrix / Fleet",
    (
        Panel(
            "Nodes reporting",
            (("sum(velyrix_node_up)", "up"), ("count(velyrix_node_up) - sum(velyrix_node_up)", "down")),
            kind="stat",
            width=6,
            height=4,
        ),
        Panel(
            "GPUs allocated / total",
            (("velyrix:gpus_allocated:count", "allocated"), ("sum(velyrix_node_gpus)", "total")),
            kind="stat",
            width=6,
            height=4,
        ),
        Panel(
            "Allocated but idle GPUs",
            (("velyrix:gpus_allocated_idle:count", "idle"),),
            kind="stat",
            width=6,
            height=4,
            description="GPUs of a job that averaged under 5% utilization over 15 minutes.",
        ),
        Panel(
            "GPUs off the bus",
            (("count(velyrix_gpu_responsive == 0) or vector(0)", "lost"),),
            kind="stat",
            width=6,
            height=4,
        ),
        Panel(
            "Nodes by health verdict",
            tuple(
                (f"count(velyrix_node_health_level == {n}) or vector(0)", level)
                for n, level in enumerate(("ok", "warn", "degraded", "fatal"))
            ),
            kind="stat",
            width=24,
            height=4,
        ),
        Panel(
            "GPU utilization by model",
            (("avg by (modelName) (DCGM_FI_DEV_GPU_UTIL)", "{{modelName}}"),),
            unit="percent",
        ),
        Panel("Power draw", (("sum(DCGM_FI_DEV_POWER_USAGE)", "total"),), unit="watt"),
        Panel(
            "Fatal XIDs (1h)",
            (
                (
                    'sum by (xid) (increase(velyrix_gpu_xid_errors_total{xid=~"48|61|62|64|74|79|95|119|'
                    '120|140|143"}[1h]))',
                    "XID {{xid}}",
                ),
            ),
            kind="barchart",
        ),
        Panel(
            "Row remap failures and pending remaps",
            (("sum(DCGM_FI_DEV_ROW_REMAP_FAILURE)", "failed"), ("sum(DCGM_FI_DEV_ROW_REMAP_PENDING)", "pending")),
        ),
        Panel(
            "InfiniBand ports not ACTIVE", (("count(velyrix_ib_port_state_active == 0) or vector(0)", "down"),), width=8
        ),
        Panel(
            "InfiniBand link downs (1h)",
            (("sum(increase(velyrix_ib_port_link_downed_total[1h]))", "link downed"),),
            width=8,
        ),
        Panel(
            "GPUs held back for heat",
            (('count(velyrix_gpu_throttle_active{reason=~"hw_thermal|sw_thermal"} == 1) or vector(0)', "throttled"),),
            width=8,
        ),
        Panel("GPU-hours by team (1d)", (("team:velyrix_gpu_hours:1d", "{{team}}"),), kind="barchart"),
        Panel(
            "GPU-hours by cost center (1d)", (("cost_center:velyrix_gpu_hours:1d", "{{cost_center}}"),), kind="barchart"
        ),
    ),
    variables=(DATASOURCE_VAR,),
)

CLUSTER = Dashboard(
    "velyrix-cluster",
    "Velyrix / Cluster nodes",
    (
        Panel("GPU utilization", ((f"DCGM_FI_DEV_GPU_UTIL{{{GPU}}}", "{{Hostname}} gpu{{gpu}}"),), unit="percent"),
        Panel("Framebuffer used", ((f"DCGM_FI_DEV_FB_USED{{{GPU}}}", "{{Hostname}} gpu{{gpu}}"),), unit="mbytes"),
        Panel(
            "GPU temperature",
            (
                (f"DCGM_FI_DEV_GPU_TEMP{{{GPU}}}", "{{Hostname}} gpu{{gpu}}"),
                (f"DCGM_FI_DEV_MEMORY_TEMP{{{GPU}}}", "{{Hostname}} gpu{{gpu}} HBM"),
            ),
            unit="celsius",
        ),
        Panel("Power draw", ((f"sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE{{{GPU}}})", "{{Hostname}}"),), unit="watt"),
        Panel("SM clock", ((f"DCGM_FI_DEV_SM_CLOCK{{{GPU}}}", "{{Hostname}} gpu{{gpu}}"),), unit="hertz"),
        Panel(
            "Throttle reasons active",
            ((f"sum by (Hostname, reason) (velyrix_gpu_throttle_active{{{GPU}}})", "{{Hostname}} {{reason}}"),),
        ),
        Panel(
            "ECC errors (rate)",
            (
                (f"sum by (Hostname) (rate(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{{GPU}}}[5m]))", "{{Hostname}} single-bit"),
                (f"sum by (Hostname) (rate(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{GPU}}}[5m]))", "{{Hostname}} double-bit"),
            ),
            unit="cps",
        ),
        Panel(
            "Remapped rows",
            (
                (
                    f"max without (hpc_job) (DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{GPU}}})",
                    "{{Hostname}} gpu{{gpu}}",
                ),
                (
                    f"max without (hpc_job) (velyrix_gpu_row_remap_bank_max{{{GPU}}})",
                    "{{Hostname}} gpu{{gpu}} worst bank",
                ),
            ),
        ),
        Panel(
            "XIDs by code",
            (
                (
                    f"sum by (Hostname, gpu, xid) (increase(velyrix_gpu_xid_errors_total{{{GPU}}}[$__range]))",
                    "{{Hostname}} gpu{{gpu}} XID {{xid}}",
                ),
            ),
            kind="table",
        ),
        Panel(
            "NVLink errors (rate)",
            (
                (
                    f"sum by (Hostname) (rate(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{{{GPU}}}[5m]))",
                    "{{Hostname}} CRC",
                ),
                (
                    f"sum by (Hostname) (rate(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{{{GPU}}}[5m]))",
                    "{{Hostname}} replay",
                ),
                (
                    f"sum by (Hostname) (rate(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{{{GPU}}}[5m]))",
                    "{{Hostname}} recovery",
                ),
            ),
            unit="cps",
        ),
        Panel(
            "PCIe replays (rate)",
            ((f"sum by (Hostname) (rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{GPU}}}[5m]))", "{{Hostname}}"),),
            unit="cps",
        ),
        Panel(
            "InfiniBand throughput",
            (
                (
                    f"sum by (Hostname) (rate(velyrix_ib_port_xmit_data_bytes_total{{{GPU}}}[1m])) * 8",
                    "{{Hostname}} tx",
                ),
                (f"sum by (Hostname) (rate(velyrix_ib_port_rcv_data_bytes_total{{{GPU}}}[1m])) * 8", "{{Hostname}} rx"),
            ),
            unit="bps",
        ),
        Panel(
            "InfiniBand errors (rate)",
            (
                (
                    f"sum by (Hostname, device) (rate(velyrix_ib_port_symbol_errors_total{{{GPU}}}[5m]))",
                    "{{Hostname}} {{device}} symbol",
                ),
                (
                    f"sum by (Hostname, device) (rate(velyrix_ib_port_rcv_errors_total{{{GPU}}}[5m]))",
                    "{{Hostname}} {{device}} rcv",
                ),
                (
                    f"sum by (Hostname, device) (rate(velyrix_ib_port_xmit_wait_total{{{GPU}}}[5m]))",
                    "{{Hostname}} {{device}} xmit wait",
                ),
            ),
            unit="cps",
        ),
        Panel(
            "NVMe wear and media errors",
            (
                (f"velyrix_nvme_percent_used{{{GPU}}}", "{{Hostname}} {{device}} % used"),
                (f"velyrix_nvme_media_errors_total{{{GPU}}}", "{{Hostname}} {{device}} media errors"),
            ),
        ),
    ),
    variables=(DATASOURCE_VAR, NODE_VAR),
)

JOB_SEL = 'hpc_job="$job"'
JOB = Dashboard(
    "velyrix-job",
    "Velyrix / Job",
    (
        Panel(
            "Job",
            ((f"velyrix_job_info{{{JOB_SEL}}}", "{{user}} {{team}} {{cost_center}}"),),
            kind="table",
            width=24,
            height=4,
        ),
        Panel(
            "GPUs allocated",
            ((f"hpc_job:velyrix_gpus_allocated:count{{{JOB_SEL}}}", "GPUs"),),
            kind="stat",
            width=8,
            height=4,
        ),
        Panel(
            "GPU-hours in range",
            ((f"sum_over_time(hpc_job:velyrix_gpus_allocated:count{{{JOB_SEL}}}[$__range:1m]) / 60", "GPU-hours"),),
            kind="stat",
            width=8,
            height=4,
        ),
        Panel(
            "Idle allocated GPUs",
            ((f"hpc_job:velyrix_gpus_allocated_idle:count{{{JOB_SEL}}} or vector(0)", "idle"),),
            kind="stat",
            width=8,
            height=4,
        ),
        Panel(
            "GPU utilization",
            (
                (f"DCGM_FI_DEV_GPU_UTIL{{{JOB_SEL}}}", "{{Hostname}} gpu{{gpu}}"),
                (f"hpc_job:DCGM_FI_DEV_GPU_UTIL:avg{{{JOB_SEL}}}", "job average"),
            ),
            unit="percent",
        ),
        Panel(
            "Memory copy utilization",
            ((f"DCGM_FI_DEV_MEM_COPY_UTIL{{{JOB_SEL}}}", "{{Hostname}} gpu{{gpu}}"),),
            unit="percent",
        ),
        Panel("Framebuffer used", ((f"DCGM_FI_DEV_FB_USED{{{JOB_SEL}}}", "{{Hostname}} gpu{{gpu}}"),), unit="mbytes"),
        Panel("Power draw", ((f"hpc_job:DCGM_FI_DEV_POWER_USAGE:sum{{{JOB_SEL}}}", "job total"),), unit="watt"),
        Panel(
            "XIDs on the job's GPUs",
            (
                (
                    f"sum by (Hostname, gpu, xid) (increase(velyrix_gpu_xid_errors_total{{{JOB_SEL}}}[$__range]))",
                    "{{Hostname}} gpu{{gpu}} XID {{xid}}",
                ),
            ),
            kind="table",
        ),
        Panel("GPU temperature", ((f"DCGM_FI_DEV_GPU_TEMP{{{JOB_SEL}}}", "{{Hostname}} gpu{{gpu}}"),), unit="celsius"),
    ),
    variables=(DATASOURCE_VAR, JOB_VAR),
)

DASHBOARDS = (FLEET, CLUSTER, JOB)


def to_json(board: Dashboard) -> dict[str, Any]:
    """The Grafana dashboard model (schema 39) of ``board``; panels flow left to right, 24 columns wide."""
    panels = []
    x = y = row_h = 0
    for i, p in enumerate(board.panels, start=1):
        if x + p.width > 24:
            x, y, row_h = 0, y + row_h, 0
        panel: dict[str, Any] = {
            "id": i,
            "type": p.kind,
            "title": p.title,
            "datasource": DS,
            "gridPos": {"x": x, "y": y, "w": p.width, "h": p.height},
            "fieldConfig": {
                "defaults": {"unit": p.unit, **({"noValue": "0"} if p.kind == "stat" else {})},
                "overrides": [],
            },
            "targets": [
                {
                    "refId": chr(ord("A") + j),
                    "datasource": DS,
                    "expr": expr,
                    "legendFormat": legend,
                    **({"format": "table", "instant": True} if p.kind == "table" else {}),
                }
                for j, (expr, legend) in enumerate(p.queries)
            ],
        }
        if p.description:
            panel["description"] = p.description
        panels.append(panel)
        x, row_h = x + p.width, max(row_h, p.height)
    return {
        "__inputs": INPUTS,
        "annotations": ANNOTATIONS,
        "uid": board.uid,
        "title": board.title,
        "tags": list(board.tags),
        "schemaVersion": 39,
        "editable": True,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": list(board.variables)},
        "panels": panels,
    }


def render_all() -> dict[str, str]:
    """File name -> JSON text of every dashboard."""
    return {f"{b.uid}.json": json.dumps(to_json(b), indent=2, sort_keys=True) + "\n" for b in DASHBOARDS}


def write_all(out_dir: str | Path) -> list[Path]:
    """Write every dashboard into ``out_dir``; returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in render_all().items():
        (out / name).write_text(text)
        paths.append(out / name)
    return paths


if __name__ == "__main__":  # pragma: no cover - developer entry point
    for path in write_all(sys.argv[1] if len(sys.argv) > 1 else "deploy/grafana"):
        print(path)
