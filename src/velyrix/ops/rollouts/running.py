"""Running rollouts: ``drive`` runs one to a resting state on a twin, moving the twin's clock itself (tests,
``velyrix rollout apply --drive`` on ``velyrix up``'s twin); ``RolloutThread`` ticks every active rollout of
the region in the running service (``velyrix up``) while the twin's clock runs at its own speed."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db.models import rollouts as models_rollouts
from velyrix.fleet import clock
from velyrix.ops.rollouts import engine, notices, states
from velyrix.ops.rollouts.world import World

log = logging.getLogger(__name__)

POLL_S = 60.0
"""Simulated seconds the clock moves while a driver request runs (``drive``)."""


def drive(
    sessionmaker: orm.sessionmaker[orm.Session],
    rollout_id: str,
    world: World,
    advance: Callable[[float], object],
    *,
    sender: notices.Sender | None = None,
    max_ticks: int = 100_000,
    poll_s: float = POLL_S,
) -> str:
    """Tick the rollout until it rests (finished, halted or paused), advancing the clock (``advance(s)``,
    simulated seconds) to what it waits for, or by ``poll_s`` while a driver request runs. Returns the
    final state."""
    with sessionmaker() as session:
        controller = engine.Controller(session, rollout_id, world, sender)
        for _ in range(max_ticks):
            out = controller.tick()
            if out.state not in states.ACTIVE:
                return out.state
            if out.waiting_until is not None:
                advance(max(1.0, (out.waiting_until - clock.now()).total_seconds()))
            else:
                advance(poll_s)
        return controller.rollout.state


class RolloutThread:
    """Ticks the region's active rollouts every ``interval_s`` wall seconds until ``stop``."""

    def __init__(
        self, sessionmaker: orm.sessionmaker[orm.Session], world: World, region: str, interval_s: float = 1.0
    ) -> None:
        self.sessionmaker = sessionmaker
        self.world = world
        self.region = region
        self.interval_s = interval_s
        self.sender: notices.Sender | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick_all(self) -> int:
        """One tick of every active rollout; returns how many were ticked."""
        with self.sessionmaker() as session:
            q = sa.select(models_rollouts.Rollout.id).where(
                models_rollouts.Rollout.region == self.region, models_rollouts.Rollout.state.in_(states.ACTIVE)
            )
            ids = list(session.scalars(q))
        for rollout_id in ids:
            with self.sessionmaker() as session:
                try:
                    engine.Controller(session, rollout_id, self.world, self.sender).tick()
                except Exception:  # one rollout's failure must not stop the others; it is retried next tick
                    log.exception("rollout %s: tick failed", rollout_id)
                    session.rollback()
        return len(ids)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.tick_all()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="velyrix-rollouts", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)


def start_for(app: Any, runtime: Any) -> RolloutThread | None:
    """Run the rollouts of ``runtime``'s region in the service of ``app`` (``velyrix up``): the twin's
    world (driver, drain seam) shared with the API's rollout routes, notices sent by the NOC's ``Pager``.
    None without a twin."""
    from velyrix.ops.noc import paging
    from velyrix.ops.rollouts.world import twin_world

    if runtime.sim is None:
        return None
    world = twin_world(runtime.sim, runtime.driver)
    world.before_commit = runtime.save_twin
    world.schedulers = getattr(app.state, "schedulers", None)  # `velyrix up --slurm`: drains go to the Slurm too
    app.state.rollout_world = world
    thread = RolloutThread(runtime.sessionmaker, world, runtime.region)
    thread.sender = paging.Pager()
    thread.start()
    return thread
