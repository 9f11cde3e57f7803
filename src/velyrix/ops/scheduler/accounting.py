"""Reading Slurm accounting: jobs from ``sacct --json``, fair-share from ``sshare -P``, the account tree
from ``sacctmgr``. Jobs become a column table (numpy arrays) so reports over millions of records stay fast.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from velyrix import errors
from velyrix.ops.scheduler import commands

PENDING_STATES = ("PENDING", "REQUEUED")
PARSABLE_FIELDS = "JobIDRaw,User,Account,AllocTRES,Submit,Start,End"
_GPU_TRES = re.compile(r"(?:^|,)gres/gpu=(\d+)")


@dataclass
class JobTable:
    """Allocations (one row per run of a job: a requeued job has a row per run), as arrays of equal length.

    Times are UNIX seconds; ``start``/``end`` are 0 when the job has not started/ended. ``users`` and
    ``accounts`` are the categories the integer codes ``user``/``account`` index.
    """

    job_id: np.ndarray
    user: np.ndarray
    account: np.ndarray
    gpus: np.ndarray
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    users: list[str]
    accounts: list[str]

    def __len__(self) -> int:
        return int(self.job_id.shape[0])

    @classmethod
    def from_records(cls, jobs: list[dict[str, Any]]) -> JobTable:
        """Rows from sacct's JSON ``jobs`` (22.05 layout: ``tres.allocated``, ``time.submission|start|end``)."""
        c = _Columns(len(jobs))
        for i, j in enumerate(jobs):
            c.job_id[i] = j["job_id"]
            c.user[i] = c.users.setdefault(j.get("user") or "", len(c.users))
            c.account[i] = c.accounts.setdefault(j.get("account") or "", len(c.accounts))
            t = j.get("time") or {}
            c.times[i] = (t.get("submission") or 0, t.get("start") or 0, t.get("end") or 0)
            for tres in (j.get("tres") or {}).get("allocated") or ():
                if tres.get("type") == "gres" and tres.get("name") == "gpu":
                    c.gpus[i] = tres.get("count") or 0
        return c.table(len(jobs))

    @classmethod
    def from_parsable(cls, text: str) -> JobTable:
        """Rows from ``sacct -P -n -o JobIDRaw,User,Account,AllocTRES,Submit,Start,End`` with
        ``SLURM_TIME_FORMAT=%s`` (times as UNIX seconds; ``Unknown`` for not yet)."""
        lines = text.splitlines()
        c = _Columns(len(lines))
        k = 0
        for line in lines:
            f = line.split("|")
            if len(f) < 7 or not f[0].isdigit():
                continue
            c.job_id[k] = int(f[0])
            c.user[k] = c.users.setdefault(f[1], len(c.users))
            c.account[k] = c.accounts.setdefault(f[2], len(c.accounts))
            m = _GPU_TRES.search(f[3])
            if m:
                c.gpus[k] = int(m.group(1))
            c.times[k] = (
                int(f[4]) if f[4].isdigit() else 0,
                int(f[5]) if f[5].isdigit() else 0,
                int(f[6]) if f[6].isdigit() else 0,
            )
            k += 1
        return c.table(k)

    def gpu_seconds(self, t_from: float, t_to: float, now: float | None = None) -> np.ndarray:
        """GPU-seconds each job held inside [t_from, t_to) (running jobs count up to ``now``)."""
        now = float(now if now is not None else datetime.now(UTC).timestamp())
        started = self.start > 0
        end = np.where(self.end > 0, self.end, np.int64(now))
        lo = np.maximum(self.start, np.int64(t_from))
        hi = np.minimum(end, np.int64(t_to))
        return np.where(started, np.clip(hi - lo, 0, None), 0) * self.gpus

    def wait_seconds(self) -> np.ndarray:
        """Queue wait of started jobs (start - submit), NaN for jobs that never started."""
        return np.where(self.start > 0, (self.start - self.submit).astype(float), np.nan)


class _Columns:
    """Preallocated columns for up to ``n`` rows that a parser fills; names are coded in order of first sight."""

    def __init__(self, n: int) -> None:
        self.job_id = np.empty(n, dtype=np.int64)
        self.user = np.empty(n, dtype=np.int32)
        self.account = np.empty(n, dtype=np.int32)
        self.gpus = np.zeros(n, dtype=np.int64)
        self.times = np.zeros((n, 3), dtype=np.int64)  # submit, start, end
        self.users: dict[str, int] = {}
        self.accounts: dict[str, int] = {}

    def table(self, rows: int) -> JobTable:
        """The first ``rows`` rows (the ones the parser kept) as a ``JobTable``."""
        t = self.times[:rows]
        return JobTable(
            self.job_id[:rows],
            self.user[:rows],
            self.account[:rows],
            self.gpus[:rows],
            t[:, 0],
            t[:, 1],
            t[:, 2],
            list(self.users),
            list(self.accounts),
        )


def to_epoch(value: str | datetime) -> int:
    """UNIX seconds of an ISO date or datetime (naive values are UTC)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise errors.InvalidInputError(
                f"bad time '{value}'", hint="use ISO 8601, e.g. 2026-11-01 or 2026-11-01T12:00"
            ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp())


def _slurm_time(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def load_jobs(
    slurm: commands.Slurm, t_from: int, t_to: int, cluster: str | None = None, *, source: str = "json"
) -> JobTable:
    """Jobs that ran (or waited) in [t_from, t_to), every user, allocations only.

    ``source``: ``json`` reads ``sacct --json`` (complete records); ``parsable`` reads ``sacct -P`` with
    just the fields a report needs, several times faster on months of a large cluster.
    """
    args = ["-a", "-X", "-S", _slurm_time(t_from), "-E", _slurm_time(t_to)]
    if cluster:
        args += ["-M", cluster]
    # sacct reads -S/-E in the local zone of its environment; pin it to UTC like our epochs.
    slurm.env.setdefault("TZ", "UTC")
    if source == "parsable":
        slurm.env["SLURM_TIME_FORMAT"] = "%s"
        try:
            # -D: every run of a requeued (preempted) job, as the JSON output lists them.
            text = slurm.out("sacct", "-P", "-n", "-D", "-o", PARSABLE_FIELDS, *args)
        finally:
            slurm.env.pop("SLURM_TIME_FORMAT", None)
        return JobTable.from_parsable(text)
    if source != "json":
        raise errors.InvalidInputError(f"unknown accounting source '{source}'", hint="use json or parsable")
    doc = json.loads(slurm.out("sacct", "--json", *args) or "{}")
    return JobTable.from_records(doc.get("jobs") or [])


@dataclass(frozen=True)
class ShareRow:
    """One association of ``sshare -a -l -P``."""

    account: str
    user: str
    depth: int
    raw_shares: str
    norm_shares: float
    raw_usage: float
    effective_usage: float
    fairshare: float | None
    level_fs: float | None


def _f(text: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    return float("inf") if text == "inf" else float(text)


def load_shares(slurm: commands.Slurm) -> tuple[list[dict[str, str]], list[ShareRow]]:
    """``sshare -a -l -P``: raw rows (as printed) and typed rows."""
    rows = commands.parse_pipe(slurm.out("sshare", "-a", "-l", "-P"))
    typed = []
    for r in rows:
        acct = r.get("Account", "")
        typed.append(
            ShareRow(
                account=acct.strip(),
                user=r.get("User", "").strip(),
                depth=len(acct) - len(acct.lstrip(" ")),
                raw_shares=r.get("RawShares", ""),
                norm_shares=_f(r.get("NormShares", "")) or 0.0,
                raw_usage=_f(r.get("RawUsage", "")) or 0.0,
                effective_usage=_f(r.get("EffectvUsage", "")) or 0.0,
                fairshare=_f(r.get("FairShare", "")),
                level_fs=_f(r.get("LevelFS", "")),
            )
        )
    return rows, typed


def account_parents(slurm: commands.Slurm, cluster: str | None = None) -> dict[str, str]:
    """Account → parent account, from ``sacctmgr show assoc`` (root has parent '')."""
    where = [f"cluster={cluster}"] if cluster else []
    out: dict[str, str] = {}
    for ln in slurm.out("sacctmgr", "-n", "-P", "show", "assoc", *where, "format=Account,User,ParentName").splitlines():
        acct, user, parent = (ln.split("|") + ["", ""])[:3]
        if acct and not user:
            out[acct] = parent
    return out


def cost_centers(parents: dict[str, str]) -> dict[str, str]:
    """Account → its cost center: the ancestor just below root (an account under root is its own)."""
    out = {}
    for acct in parents:
        a, seen = acct, set()
        while parents.get(a, "root") not in ("root", "") and a not in seen:
            seen.add(a)
            a = parents[a]
        out[acct] = a
    return out
