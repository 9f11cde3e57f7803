"""Prometheus exposition of ``NodeSample``s, DCGM-compatible, with per-job labels.

Names and types follow dcgm-exporter (REFERENCE §3) so that existing dashboards keep working: GPU
metrics are ``DCGM_FI_DEV_*`` with the labels ``gpu``, ``UUID``, ``device``, ``modelName``,
``Hostname`` and ``hpc_job``. What dcgm-exporter leaves out or gets wrong is added under ``velyrix_*``:
XID counts with an ``xid`` label (a counter, where DCGM keeps only the last XID in a gauge), throttle
reasons one series per reason, remap bank pressure, NVLink links up, InfiniBand port counters (bytes,
not 4-byte words), NVMe health, node liveness, and ``velyrix_job_info`` for attribution joins.

The text is rendered here rather than by ``prometheus_client.generate_latest`` for two reasons: DCGM's
counters have no ``_total`` suffix (prometheus_client would announce them under another name), and a
fleet exporter renders hundreds of thousands of series per scrape. ``PrometheusCollector`` adapts the
same families to a ``prometheus_client`` registry for programs that embed the agent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from velyrix import errors
from velyrix.agent import ib_names
from velyrix.agent.collectors.base import GPUReading, IBPortReading, NodeSample, NVMeReading
from velyrix.agent.dcgm_fields import DRIVER_LABEL, GPU_METRICS, XID_COUNT_METRIC, MetricDef
from velyrix.agent.jobs import JobMap

XID_COUNT_HELP = "XID errors reported since the collector started, by XID code (dcgm-exporter's XID counter)."
XID_METRIC = MetricDef(
    "velyrix_gpu_xid_errors_total", "counter", "XID errors reported by the driver, by XID code.", "xid_counts"
)
THROTTLE_METRIC = MetricDef(
    "velyrix_gpu_throttle_active",
    "gauge",
    "1 while the clocks are held back for this reason (NVML clock event reasons).",
    "throttle_reasons",
)
# NVML clock event reason bits (nvml.h nvmlClocksEventReason*); GPU idle and app clocks are not problems.
THROTTLE_REASONS: dict[str, int] = {
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal": 0x20,
    "hw_thermal": 0x40,
    "hw_power_brake": 0x80,
}

# sysfs counter name -> (metric suffix, help, scale). port_*_data counts 4-byte words (IB PortCounters).
IB_COUNTERS: dict[str, tuple[str, str, float]] = {
    "symbol_error": ("symbol_errors_total", "Minor link errors detected on one or more physical lanes.", 1),
    "link_downed": ("link_downed_total", "Times the link failed to recover and went down.", 1),
    "link_error_recovery": ("link_error_recovery_total", "Successful link error recoveries.", 1),
    "port_rcv_errors": ("rcv_errors_total", "Packets received with errors.", 1),
    "port_xmit_wait": ("xmit_wait_total", "Ticks during which the port had data but could not send.", 1),
    "port_xmit_data": ("xmit_data_bytes_total", "Data bytes transmitted.", 4),
    "port_rcv_data": ("rcv_data_bytes_total", "Data bytes received.", 4),
    "port_xmit_packets": ("xmit_packets_total", "Packets transmitted.", 1),
    "port_rcv_packets": ("rcv_packets_total", "Packets received.", 1),
}

OTHER_METRICS: dict[str, tuple[str, str]] = {
    "velyrix_ib_port_state_active": ("gauge", "1 when the InfiniBand port is ACTIVE."),
    "velyrix_ib_port_rate_gbps": ("gauge", "InfiniBand port rate (in Gb/s)."),
    "velyrix_nvme_media_errors_total": ("counter", "NVMe unrecovered data integrity errors (SMART)."),
    "velyrix_nvme_percent_used": ("gauge", "NVMe endurance used (SMART, in %)."),
    "velyrix_nvme_read_bytes_total": ("counter", "Bytes read from the NVMe drive."),
    "velyrix_nvme_written_bytes_total": ("counter", "Bytes written to the NVMe drive."),
    "velyrix_node_up": ("gauge", "1 when the node answered the collector (powered and reachable)."),
    "velyrix_node_sample_timestamp_seconds": ("gauge", "Wall-clock time of the node's latest sample (Unix s)."),
    "velyrix_node_gpus": ("gauge", "GPUs the collector sees on the node."),
    "velyrix_job_info": ("gauge", "Attribution of a job present in the job mapping (always 1)."),
    "velyrix_node_health_level": (
        "gauge",
        "Health verdict of the agent's passive checks: 0 ok, 1 warn, 2 degraded, 3 fatal.",
    ),
    "velyrix_node_health_action": (
        "gauge",
        "Action the health verdict asks for, as a ladder rung: 0 ignore, "
        "1 restart app, 2 reset GPU, 3 reboot, 4 drain after job, 5 drain now, "
        "6 quarantine, 7 RMA.",
    ),
}

GPU_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", DRIVER_LABEL)
"""Labels of every GPU series, before the job labels (``hpc_job``, or ``pod``/``namespace``/``container``)."""


def exported_metric_names() -> set[str]:
    """Every metric name the exporter can emit (dashboards and rules may use only these)."""
    names = {m.name for m in GPU_METRICS} | {XID_METRIC.name, XID_COUNT_METRIC, THROTTLE_METRIC.name}
    names |= set(OTHER_METRICS)
    names |= {f"velyrix_ib_port_{suffix}" for suffix, _, _ in IB_COUNTERS.values()} | ib_names.node_exporter_names()
    return names


def _esc(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def _num(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if value != value:  # NaN
        return "NaN"
    return repr(float(value))


def _labelstr(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in pairs) + "}"


Snapshot = list[tuple[NodeSample, JobMap]]
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def families(snapshot: Snapshot, ib_metrics: str = "velyrix") -> Iterator[tuple[str, str, str, list[tuple[str, Any]]]]:
    """Yield ``(name, type, help, [(label string, value)])`` per metric, samples of all nodes together.
    ``ib_metrics``: ``velyrix``, ``node_exporter`` or ``off`` (see agent/ib_names.py)."""
    # Per GPU: one label string per job on it (dcgm-exporter repeats a GPU's series per job), or one
    # with empty job labels when the GPU is idle.
    gpu_rows: list[tuple[GPUReading, list[str]]] = []
    for sample, jobs in snapshot:
        if not sample.up:
            continue
        for g in sample.gpus:
            base = (
                f'gpu="{g.index}",UUID="{_esc(g.uuid)}",pci_bus_id="{_esc(g.pci_bus_id or "")}",'
                f'device="nvidia{g.index}",modelName="{_esc(g.name)}",Hostname="{_esc(sample.hostname)}",'
                f'{DRIVER_LABEL}="{_esc(g.driver_version or "")}"'
            )
            gpu_rows.append((g, [f"{{{base},{lab}}}" for lab in _job_labels(jobs, g.index)]))
    for m in GPU_METRICS:
        rows = []
        for g, labels in gpu_rows:
            value = getattr(g, m.attr)
            if value is None:
                continue
            for lab in labels:
                rows.append((lab, value))
        yield m.name, m.type, m.help, rows
    rows = []
    for g, labels in gpu_rows:
        for xid, count in sorted(g.xid_counts.items()):
            for lab in labels:
                rows.append((f'{lab[:-1]},xid="{xid}"}}', count))
    yield XID_METRIC.name, XID_METRIC.type, XID_METRIC.help, rows
    yield XID_COUNT_METRIC, "counter", XID_COUNT_HELP, rows
    rows = []
    for g, labels in gpu_rows:
        if g.throttle_reasons is None:
            continue
        for reason, bit in THROTTLE_REASONS.items():
            active = 1 if g.throttle_reasons & bit else 0
            for lab in labels:
                rows.append((f'{lab[:-1]},reason="{reason}"}}', active))
    yield THROTTLE_METRIC.name, THROTTLE_METRIC.type, THROTTLE_METRIC.help, rows
    yield from _ib_families(snapshot, ib_metrics)
    yield from _nvme_families(snapshot)
    yield from _node_families(snapshot)


def _job_labels(jobs: JobMap, gpu: int) -> list[str]:
    """Job label strings of one GPU: ``pod``/``namespace``/``container`` for Kubernetes pods (as
    dcgm-exporter's ``--kubernetes``), ``hpc_job`` for scheduler jobs; empty values when idle."""
    out = []
    for job in jobs.jobs_of(gpu):
        info = jobs.info.get(job)
        if info is not None and info.pod:
            out.append(f'pod="{_esc(info.pod)}",namespace="{_esc(info.namespace)}",container="{_esc(info.container)}"')
        else:
            out.append(f'hpc_job="{_esc(job)}"')
    if out:
        return out
    return ['pod="",namespace="",container=""' if jobs.kubernetes else 'hpc_job=""']


def _ib_families(snapshot: Snapshot, mode: str) -> Iterator[tuple[str, str, str, list[tuple[str, Any]]]]:
    if mode not in ib_names.IB_METRICS_MODES:
        raise errors.InvalidInputError(
            f"unknown InfiniBand metric names '{mode}'", hint=", ".join(ib_names.IB_METRICS_MODES)
        )
    if mode == "off":
        return
    ports: list[tuple[str, IBPortReading]] = []
    for sample, _ in snapshot:
        if sample.up:
            ports.extend(
                (_labelstr((("Hostname", sample.hostname), ("device", p.device), ("port", str(p.port)))), p)
                for p in sample.ib_ports
            )
    if mode == "node_exporter":
        yield from ib_names.node_exporter_families(ports)
        return
    for counter, (suffix, help_text, scale) in IB_COUNTERS.items():
        rows = [
            (lab, p.counters[counter] * scale if scale != 1 else p.counters[counter])
            for lab, p in ports
            if counter in p.counters
        ]
        yield f"velyrix_ib_port_{suffix}", "counter", help_text, [(lab, int(v)) for lab, v in rows]
    yield (
        "velyrix_ib_port_state_active",
        *OTHER_METRICS["velyrix_ib_port_state_active"],
        [(lab, p.state == "ACTIVE") for lab, p in ports],
    )
    yield (
        "velyrix_ib_port_rate_gbps",
        *OTHER_METRICS["velyrix_ib_port_rate_gbps"],
        [(lab, p.rate_gbps) for lab, p in ports if p.rate_gbps is not None],
    )


def _nvme_families(snapshot: Snapshot) -> Iterator[tuple[str, str, str, list[tuple[str, Any]]]]:
    drives: list[tuple[str, NVMeReading]] = []
    for sample, _ in snapshot:
        if sample.up:
            drives.extend((_labelstr((("Hostname", sample.hostname), ("device", d.name))), d) for d in sample.nvme)
    for name, attr in (
        ("velyrix_nvme_media_errors_total", "media_errors"),
        ("velyrix_nvme_percent_used", "percent_used"),
        ("velyrix_nvme_read_bytes_total", "read_bytes"),
        ("velyrix_nvme_written_bytes_total", "written_bytes"),
    ):
        rows = [(lab, getattr(d, attr)) for lab, d in drives if getattr(d, attr) is not None]
        yield (name, *OTHER_METRICS[name], rows)


def _node_families(snapshot: Snapshot) -> Iterator[tuple[str, str, str, list[tuple[str, Any]]]]:
    nodes = [(_labelstr((("Hostname", s.hostname), ("node_type", s.node_type or ""))), s) for s, _ in snapshot]
    yield ("velyrix_node_up", *OTHER_METRICS["velyrix_node_up"], [(lab, s.up) for lab, s in nodes])
    yield (
        "velyrix_node_sample_timestamp_seconds",
        *OTHER_METRICS["velyrix_node_sample_timestamp_seconds"],
        [(_labelstr((("Hostname", s.hostname),)), round(s.collected_at_s, 3)) for _, s in nodes],
    )
    yield ("velyrix_node_gpus", *OTHER_METRICS["velyrix_node_gpus"], [(lab, len(s.gpus)) for lab, s in nodes if s.up])
    checked = [(_labelstr((("Hostname", s.hostname),)), s) for s, _ in snapshot if s.up and s.health_level is not None]
    yield (
        "velyrix_node_health_level",
        *OTHER_METRICS["velyrix_node_health_level"],
        [(lab, s.health_level) for lab, s in checked],
    )
    yield (
        "velyrix_node_health_action",
        *OTHER_METRICS["velyrix_node_health_action"],
        [(lab, s.health_action) for lab, s in checked],
    )
    seen: dict[str, str] = {}
    for _, jobs in snapshot:
        for job in jobs.job_ids():
            if job not in seen:
                seen[job] = _labelstr(jobs.info[job].labels().items())
    yield ("velyrix_job_info", *OTHER_METRICS["velyrix_job_info"], [(lab, 1) for lab in seen.values()])


def render(snapshot: Snapshot, ib_metrics: str = "velyrix") -> bytes:
    """The Prometheus text exposition (format 0.0.4) of ``snapshot``; families without samples are left out."""
    out: list[str] = []
    for name, typ, help_text, rows in families(snapshot, ib_metrics):
        if not rows:
            continue
        out.append(f"# HELP {name} {help_text}\n# TYPE {name} {typ}\n")
        out.extend(f"{name}{lab} {_num(v)}\n" for lab, v in rows)
    return "".join(out).encode()


class PrometheusCollector:
    """``prometheus_client`` custom collector over the same families, for embedding in a registry.

    ``source`` returns the current snapshot. DCGM counters without a ``_total`` suffix are typed
    ``unknown`` here, because prometheus_client would announce a counter under ``<name>_total``.
    """

    def __init__(self, source: Callable[[], Snapshot]):
        self.source = source

    def collect(self) -> Iterator[Any]:
        from prometheus_client.metrics_core import Metric

        for name, typ, help_text, rows in families(self.source()):
            if typ == "counter" and name.endswith("_total"):
                metric = Metric(name[:-6], help_text, "counter")
            else:
                metric = Metric(name, help_text, "gauge" if typ == "gauge" else "unknown")
            for lab, value in rows:
                labels = {
                    k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\") for k, v in _LABEL.findall(lab)
                }
                metric.add_sample(name, labels, float(value))
            yield metric
