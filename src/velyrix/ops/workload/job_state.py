"""The training job's phase machine: compute, save (sync), stage and drain (async), restart.

Work is counted in nominal training seconds (a step of ``step_time_s`` on healthy nodes is worth
``step_time_s``); a save is due every ``interval_s`` of work. Wall time goes to one bucket of
``JobState.wall`` at a time; work goes to ``committed`` (in a complete checkpoint), ``lost`` (done after
the last complete checkpoint when the job stopped) or stays uncommitted until the next save completes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from velyrix import units
from velyrix.ops.workload.job import JobSpec
from velyrix.ops.workload.tier import TwinTier

EPS = 1e-9


@dataclass
class Restart:
    """One restart in progress: since when, until when it waits (detect, a replacement), its parts (s)."""

    started_s: float
    ready_s: float
    planned: bool
    detect_s: float
    reschedule_end_s: float | None = None
    reload_end_s: float | None = None


@dataclass
class JobState:
    """Where the job is; ``run_until`` moves it through its phases. ``on_commit`` is called after every
    complete checkpoint (the runner stops the job there when a node waits to be drained after one)."""

    job: JobSpec
    tier: TwinTier
    on_commit: Callable[[float], None]
    log: list[dict[str, Any]] = field(default_factory=list)
    t: float = 0.0
    phase: str = "compute"
    phase_end: float = 0.0
    speed: float = 1.0
    work_since_save: float = 0.0
    uncommitted: float = 0.0
    in_flight: float = 0.0
    drain_end: float | None = None
    save_started: float = 0.0
    restart: Restart | None = None
    committed: float = 0.0
    lost: float = 0.0
    slowed: float = 0.0
    data_stalled: float = 0.0
    saves: int = 0
    wall: dict[str, float] = field(
        default_factory=lambda: {"compute": 0.0, "checkpoint_stall": 0.0, "restart": 0.0, "spare_wait": 0.0}
    )

    # --- rates -----------------------------------------------------------------------------------
    def _data_factor(self, t: float) -> float:
        need = self.job.read_bytes_per_s / units.GB
        if need <= 0:
            return 1.0
        return min(1.0, self.tier.data_read_at(t) / need)

    # --- the machine -----------------------------------------------------------------------------
    def run_until(self, end: float) -> None:
        """Move the job to simulated time ``end`` (s)."""
        while self.t < end - EPS:
            if self.phase == "compute":
                self._compute(end)
            elif self.phase == "restart":
                self._restarting(end)
            else:
                self._blocked(end)

    def _compute(self, end: float) -> None:
        data = self._data_factor(self.t)
        rate = self.speed * data
        due = self.t + (self.job.interval_s - self.work_since_save) / rate if rate > 0 else float("inf")
        nxt = min(due, end, self.drain_end if self.drain_end is not None else float("inf"))
        dt = max(0.0, nxt - self.t)
        self.wall["compute"] += dt
        self.work_since_save += rate * dt
        self.uncommitted += rate * dt
        self.slowed += (1.0 - self.speed) * dt
        self.data_stalled += self.speed * (1.0 - data) * dt
        self.t = nxt
        if self.drain_end is not None and self.t >= self.drain_end - EPS:
            self._drained()
            if self.phase != "compute":
                return
        if self.t >= due - EPS:
            self._begin_save()

    def _begin_save(self) -> None:
        self.work_since_save = 0.0
        self.save_started = self.t
        if self.job.mode == "async":
            if self.drain_end is not None:  # the previous save is still draining: wait for it
                self.phase, self.phase_end = "drain_wait", self.drain_end
                return
            stage = self.job.per_rank_bytes / units.GB / self.job.staging_gb_s_per_gpu + self.job.async_fixed_s
            self.phase, self.phase_end = "stage", self.t + stage
            return
        end = self.tier.transfer_end(self.t, self.job.checkpoint_bytes, self.job.per_node_bytes, write=True)
        self.phase, self.phase_end = "save", end

    def _blocked(self, end: float) -> None:
        nxt = min(end, self.phase_end)
        self.wall["checkpoint_stall"] += nxt - self.t
        self.t = nxt
        if self.t < self.phase_end - EPS:
            return
        phase, self.phase = self.phase, "compute"
        if phase == "save":
            self.log.append(
                {"t_s": self.save_started, "kind": "save", "mode": "sync", "blocked_s": self.t - self.save_started}
            )
            self._commit(self.uncommitted)
        elif phase == "drain_wait":
            self.log.append(
                {
                    "t_s": self.save_started,
                    "kind": "stall",
                    "reason": "previous save still draining",
                    "s": self.t - self.save_started,
                }
            )
            self._drained()
            if self.phase == "compute":
                self.save_started = self.t
                self._begin_save()
        else:  # staged in host RAM: training resumes while the copy drains to the tier
            self.in_flight, self.uncommitted = self.uncommitted, 0.0
            self.drain_end = self.tier.transfer_end(
                self.t, self.job.checkpoint_bytes, self.job.per_node_bytes, write=True
            )
            self.log.append(
                {
                    "t_s": self.save_started,
                    "kind": "save",
                    "mode": "async",
                    "blocked_s": self.t - self.save_started,
                    "drain_s": self.drain_end - self.t,
                }
            )

    def _drained(self) -> None:
        committed, self.in_flight, self.drain_end = self.in_flight, 0.0, None
        self._commit(committed, drained=True)

    def _commit(self, work: float, *, drained: bool = False) -> None:
        self.committed += work
        if not drained:
            self.uncommitted -= work
        self.saves += 1
        self.on_commit(self.t)

    # --- stopping and restarting -----------------------------------------------------------------
    def stop(self, t: float, *, planned: bool, reason: str) -> float:
        """The job stops at ``t``: work since the last complete checkpoint is lost (an in-flight async save
        with it); a restart begins (with the detection delay unless ``planned``). Returns the work lost (s)."""
        lost = self.uncommitted + self.in_flight
        self.lost += lost
        self.uncommitted = self.in_flight = self.work_since_save = 0.0
        self.drain_end = None
        detect = 0.0 if planned else self.job.detect_s
        if self.phase == "restart" and self.restart is not None and planned:
            return lost  # already restarting: the replacement joins that restart
        self.phase = "restart"
        self.restart = Restart(started_s=t, ready_s=t + detect, planned=planned, detect_s=detect)
        self.log.append(
            {
                "t_s": t,
                "kind": "stop",
                "planned": planned,
                "reason": reason,
                "lost_work_s": lost,
                "work_s": self.committed,
            }
        )
        return lost

    def wait_for(self, ready_s: float) -> None:
        """The restart in progress cannot place the job before ``ready_s`` (a replacement node's arrival)."""
        if self.restart is not None and self.restart.reschedule_end_s is None:
            self.restart.ready_s = max(self.restart.ready_s, ready_s)

    def _restarting(self, end: float) -> None:
        r = self.restart
        assert r is not None
        if r.reschedule_end_s is None:
            nxt = min(end, r.ready_s)
            bucket = "restart" if self.t < r.started_s + r.detect_s else "spare_wait"
            nxt = min(nxt, r.started_s + r.detect_s) if bucket == "restart" else nxt
            self.wall[bucket] += nxt - self.t
            self.t = nxt
            if self.t >= r.ready_s - EPS:
                r.reschedule_end_s = self.t + self.job.reschedule_s
            return
        if r.reload_end_s is None and self.t >= r.reschedule_end_s - EPS:
            r.reload_end_s = self.tier.transfer_end(
                self.t, self.job.checkpoint_bytes, self.job.per_node_bytes, write=False
            )
        target = r.reload_end_s if r.reload_end_s is not None else r.reschedule_end_s
        nxt = min(end, target)
        self.wall["restart"] += nxt - self.t
        self.t = nxt
        if r.reload_end_s is not None and self.t >= r.reload_end_s - EPS:
            self.log.append(
                {
                    "t_s": r.started_s,
                    "kind": "restart",
                    "planned": r.planned,
                    "s": self.t - r.started_s,
                    "reload_s": r.reload_end_s - r.reschedule_end_s,
                    "work_s": self.committed,
                }
            )
            self.phase, self.restart = "compute", None

    def finish(self) -> float:
        """At the end of the horizon the job simply ends: its uncommitted work counts (as the planner's
        simulation counts it). Returns the useful work (s)."""
        return self.committed + self.uncommitted + self.in_flight
