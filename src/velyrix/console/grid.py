"""The node grid of a cluster page: its nodes by scalable unit (rows) and their GPUs by rail (columns),
each coloured by health. Pure: it shapes rows the routes read through the principal's scope.

Inputs: node rows (``name``, ``provisioning_state``, ``fleet_stage``, ``hardware``) and the nodes' last
agent reports by node id (``health_level`` 0 ok .. 3 fatal, ``velyrix.health.ladder.Level``; ``sample``:
``velyrix.agent.collectors.base.NodeSample.to_dict()``). A GPU's rail is the rail of the NIC cabled
beside it (``hardware.position.leaf_ports``, ``velyrix.fleet.hardware.LeafPort``), else its index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from velyrix.agent.jobs import INFO_FIELDS, JOB_ID, MAX_REPORTED_JOBS, MAX_VALUE_CHARS
from velyrix.fleet.hardware import StoredHardware

HEALTH = {0: "ok", 1: "warn", 2: "degraded", 3: "fatal"}
"""``velyrix.health.ladder.Level`` value -> the word (and CSS class) the grid shows."""


@dataclass(frozen=True)
class Job:
    """A job on a node, as its agent reported it (``NodeSample.jobs``: the exporter's ``hpc_job``)."""

    hpc_job: str
    gpus: tuple[int, ...]
    user: str = ""
    team: str = ""
    cost_center: str = ""
    account: str = ""


def jobs_of(sample: Mapping[str, Any] | None) -> tuple[Job, ...]:
    """The reported jobs that are well formed (an id matching ``JOB_ID``, GPU indices, short attribution):
    a report is the node's claim, shown only within the agent's own limits (``velyrix.agent.jobs``)."""
    out = []
    raw = (sample or {}).get("jobs")
    for j in raw[:MAX_REPORTED_JOBS] if isinstance(raw, list) else ():
        job = j.get("hpc_job") if isinstance(j, Mapping) else None
        if not isinstance(job, str) or not JOB_ID.match(job):
            continue
        gpus = tuple(sorted({g for g in j.get("gpus") or () if isinstance(g, int) and 0 <= g < 1024}))
        info = {k: str(j.get(k) or "")[:MAX_VALUE_CHARS] for k in INFO_FIELDS}
        out.append(Job(job, gpus, **info))
    return tuple(out)


@dataclass(frozen=True)
class Gpu:
    """One GPU cell: NVML index, rail, XID counts since boot, ECC counts (volatile single/double bit)."""

    index: int
    rail: int
    xids: dict[str, int]
    ecc_sbe: int | None
    ecc_dbe: int | None
    temperature_c: float | None
    jobs: tuple[str, ...] = ()

    @property
    def health(self) -> str:
        """``fatal`` with a double-bit ECC error, ``warn`` with XIDs or single-bit ones, else ``ok``."""
        if self.ecc_dbe:
            return "fatal"
        return "warn" if self.xids or self.ecc_sbe else "ok"


@dataclass(frozen=True)
class NodeCell:
    """One node of the grid: its health word (``unknown`` before its first report) and GPUs by rail."""

    id: str
    name: str
    state: str
    stage: str
    health: str
    summary: str
    gpus: tuple[Gpu, ...]
    jobs: tuple[Job, ...] = ()
    """The jobs its last report named; none: idle."""


@dataclass
class Unit:
    """The nodes of one scalable unit (``su`` None: position not known yet)."""

    su: int | None
    nodes: list[NodeCell] = field(default_factory=list)


def _rails(hardware: Mapping[str, Any] | None) -> list[int]:
    position = (hardware or {}).get("position") or {}
    return [int(p["rail"]) for p in position.get("leaf_ports") or () if isinstance(p, Mapping) and "rail" in p]


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def gpus(sample: Mapping[str, Any] | None, hardware: Mapping[str, Any] | None) -> tuple[Gpu, ...]:
    """The GPUs of a report's sample, ordered by rail, each with the jobs on it."""
    rails = _rails(hardware)
    on: dict[int, list[str]] = {}
    for job in jobs_of(sample):
        for g in job.gpus:
            on.setdefault(g, []).append(job.hpc_job)
    out: list[Gpu] = []
    for g in (sample or {}).get("gpus") or ():
        index = int(g.get("index", len(out)))
        temperature = g.get("temperature_c")
        out.append(
            Gpu(
                index=index,
                rail=rails[index] if index < len(rails) else index,
                xids={str(k): int(v) for k, v in (g.get("xid_counts") or {}).items() if int(v)},
                ecc_sbe=_int(g.get("ecc_sbe_volatile")),
                ecc_dbe=_int(g.get("ecc_dbe_volatile")),
                temperature_c=None if temperature is None else float(temperature),
                jobs=tuple(on.get(index, ())),
            )
        )
    return tuple(sorted(out, key=lambda gpu: gpu.rail))


def layout(nodes: Sequence[Any], reports: Mapping[str, Any]) -> list[Unit]:
    """``nodes`` grouped by scalable unit (ascending, unknown last), by slot then name within one."""
    units: dict[int | None, Unit] = {}
    keyed = []
    for node in nodes:
        hw = StoredHardware.from_dict(node.hardware)
        keyed.append((hw.su, hw.slot if hw.slot is not None else 1 << 30, node.name, node))
    for su, _slot, _name, node in sorted(keyed, key=lambda k: (k[0] is None, k[0] or 0, k[1], k[2])):
        report = reports.get(node.id)
        level = getattr(report, "health_level", None)
        health = "unknown" if report is None else HEALTH.get(int(level or 0), "fatal")
        if report is not None and not report.up:
            health = "fatal"
        cell = NodeCell(
            id=node.id,
            name=node.name,
            state=node.provisioning_state,
            stage=node.fleet_stage,
            health=health,
            summary=str(getattr(report, "health_summary", "") or ""),
            gpus=gpus(getattr(report, "sample", None), node.hardware),
            jobs=jobs_of(getattr(report, "sample", None)),
        )
        units.setdefault(su, Unit(su)).nodes.append(cell)
    return list(units.values())


def rails_of(units: Sequence[Unit]) -> list[int]:
    """Every rail some GPU of the grid is on, ascending (the grid's columns)."""
    return sorted({g.rail for u in units for n in u.nodes for g in n.gpus})
