"""Job mapping: which job runs on which GPU, written by the scheduler's prolog and removed by its epilog.

Directory layout (the first part is dcgm-exporter's ``--hpc-job-mapping-dir`` format, so the same
prolog serves both exporters):

- ``<dir>/<gpu index>``: the ids of the jobs on that GPU, one per line (usually one);
- ``<dir>/jobs/<job id>.json``: optional attribution, ``{"user", "team", "cost_center", "account"}``,
  exported as ``velyrix_job_info{hpc_job,user,team,cost_center,account} 1``.

Label cardinality stays bounded: only jobs present in the mapping are exported (an epilog removes ended
jobs), job ids must match ``JOB_ID`` (at most 64 characters), at most ``max_jobs_per_gpu`` jobs per GPU
and attribution values are cut to 64 characters.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from velyrix import errors

JOB_MAP_DIR = "/run/velyrix/jobs"
"""The job-mapping directory on a node: the Slurm prolog ``velyrix scheduler config`` generates writes it and
``velyrix agent`` reads it, both by default (docs/telemetry.md)."""
JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$")
INFO_FIELDS = ("user", "team", "cost_center", "account")
MAX_VALUE_CHARS = 64
MAX_REPORTED_JOBS = 64
"""Jobs one node report lists (eight GPUs at ``max_jobs_per_gpu`` 4 make 32 at most)."""


@dataclass(frozen=True)
class JobInfo:
    """Attribution of one job (empty strings when the prolog did not say)."""

    hpc_job: str
    user: str = ""
    team: str = ""
    cost_center: str = ""
    account: str = ""
    namespace: str = ""
    pod: str = ""
    container: str = ""
    """Kubernetes only: the pod holding the GPUs (GPU series are then labelled by pod, not job id)."""

    def labels(self) -> dict[str, str]:
        """The labels of ``velyrix_job_info``."""
        return {
            "hpc_job": self.hpc_job,
            "user": self.user,
            "team": self.team,
            "cost_center": self.cost_center,
            "account": self.account,
        } | ({"namespace": self.namespace, "pod": self.pod, "container": self.container} if self.pod else {})


@dataclass
class JobMap:
    """GPU index -> job ids, and job id -> attribution, as read at one instant."""

    gpu_jobs: dict[int, list[str]] = field(default_factory=dict)
    info: dict[str, JobInfo] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    kubernetes: bool = False
    """Read from the kubelet (idle GPUs get empty ``pod``/``namespace``/``container`` labels)."""

    def jobs_of(self, gpu: int) -> list[str]:
        """Job ids on GPU ``gpu`` (empty when idle)."""
        return self.gpu_jobs.get(gpu, [])

    def job_ids(self) -> list[str]:
        """Every job id present, sorted."""
        return sorted({j for jobs in self.gpu_jobs.values() for j in jobs})

    def report(self, max_jobs: int = MAX_REPORTED_JOBS) -> list[dict[str, Any]]:
        """The jobs as a node report carries them (``NodeSample.jobs``): per job its id (``hpc_job``, the
        exporter's label), GPU indices and attribution, at most ``max_jobs`` jobs (sorted by id)."""
        out = []
        for job in self.job_ids()[:max_jobs]:
            info = self.info.get(job) or JobInfo(hpc_job=job)
            gpus = sorted(g for g, on in self.gpu_jobs.items() if job in on)
            out.append({"hpc_job": job, "gpus": gpus} | {k: getattr(info, k) for k in INFO_FIELDS})
        return out


def read_job_map(directory: str | Path | None, max_jobs_per_gpu: int = 4) -> JobMap:
    """Read the mapping directory (missing or ``None`` -> an empty map; bad entries -> ``problems``)."""
    out = JobMap()
    if directory is None:
        return out
    base = Path(directory)
    if not base.is_dir():
        return out
    for entry in base.iterdir():
        if not entry.name.isdigit() or not entry.is_file():
            continue
        try:
            lines = [line.strip() for line in entry.read_text().splitlines() if line.strip()]
        except OSError:
            continue  # removed by an epilog between listing and reading
        jobs = []
        for job in lines:
            if not JOB_ID.match(job):
                out.problems.append(f"job map {entry}: ignored job id {job[:80]!r} (expected {JOB_ID.pattern})")
            elif job not in jobs:
                jobs.append(job)
        if len(jobs) > max_jobs_per_gpu:
            out.problems.append(f"job map {entry}: {len(jobs)} jobs, exporting the first {max_jobs_per_gpu}")
            jobs = jobs[:max_jobs_per_gpu]
        if jobs:
            out.gpu_jobs[int(entry.name)] = jobs
    for job in out.job_ids():
        out.info[job] = _read_info(base / "jobs" / f"{job}.json", job, out.problems)
    return out


def _read_info(path: Path, job: str, problems: list[str]) -> JobInfo:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return JobInfo(hpc_job=job)
    except (OSError, json.JSONDecodeError) as exc:
        problems.append(f"job info {path}: {exc}")
        return JobInfo(hpc_job=job)
    if not isinstance(data, dict):
        problems.append(f"job info {path}: expected a JSON object")
        return JobInfo(hpc_job=job)
    values = {k: str(data.get(k, ""))[:MAX_VALUE_CHARS] for k in INFO_FIELDS}
    return JobInfo(hpc_job=job, **values)


@contextmanager
def _locked(base: Path) -> Iterator[None]:
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_prolog(directory: str | Path, job_id: str, gpus: list[int], **info: str) -> None:
    """What a scheduler prolog does: add ``job_id`` to each GPU's file, and its attribution.

    ``info`` keys: ``user``, ``team``, ``cost_center``, ``account`` (others are rejected).
    """
    if not JOB_ID.match(job_id):
        raise errors.InvalidInputError(f"job id {job_id!r} is not valid", hint=f"expected {JOB_ID.pattern}")
    unknown = set(info) - set(INFO_FIELDS)
    if unknown:
        name = sorted(unknown)[0]
        raise errors.UnknownNameError("job info field", name, INFO_FIELDS)
    base = Path(directory)
    with _locked(base):
        if info:
            (base / "jobs").mkdir(exist_ok=True)
            _write_atomic(base / "jobs" / f"{job_id}.json", json.dumps(info, sort_keys=True))
        for gpu in gpus:
            path = base / str(int(gpu))
            jobs = path.read_text().split() if path.exists() else []
            if job_id not in jobs:
                jobs.append(job_id)
            _write_atomic(path, "\n".join(jobs) + "\n")


def remove_epilog(directory: str | Path, job_id: str) -> None:
    """What a scheduler epilog does: remove ``job_id`` from every GPU file and drop its attribution."""
    base = Path(directory)
    if not base.is_dir():
        return
    with _locked(base):
        for path in base.iterdir():
            if not path.name.isdigit():
                continue
            jobs = path.read_text().split()
            if job_id in jobs:
                rest = [j for j in jobs if j != job_id]
                if rest:
                    _write_atomic(path, "\n".join(rest) + "\n")
                else:
                    path.unlink()
        (base / "jobs" / f"{job_id}.json").unlink(missing_ok=True)
