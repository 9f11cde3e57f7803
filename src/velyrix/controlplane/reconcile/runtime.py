"""The fleet side of a running control plane: a twin region, its driver and the reconcile thread.

``velyrix up`` and ``velyrix demo`` build one with ``FleetRuntime.twin(...)``, call ``start`` (enrolls and
burns in the twin's nodes, then reconciles in a background thread) and ``attach(app)`` (the sim routes
find it in ``app.state.fleet``). After a restart the twin is built again from the same seed
and, with a ``state_file``, gets back what the driver had done to its nodes (the nodes it touched are saved
before every reconcile commit, ``twin_state``, so it is never behind the database); the reconcilers resubmit
what the database says is in flight.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from sqlalchemy import orm

from velyrix import catalog
from velyrix.controlplane.evidence import firmware
from velyrix.controlplane.reconcile import enrollment, phases, twin_state
from velyrix.controlplane.reconcile.runner import Reconciler
from velyrix.fleet import clock
from velyrix.fleet.drivers import base
from velyrix.fleet.drivers.sim import SimClock, SimDelays, SimDriver, SimRegion


class FleetRuntime:
    """A driver (the twin's, here) and the reconciler that drives it for one region."""

    def __init__(
        self,
        sessionmaker: orm.sessionmaker[orm.Session],
        driver: base.Driver,
        region: str,
        sim: SimRegion | None = None,
        settings: phases.ReconcileSettings | None = None,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.driver = driver
        self.region = region
        self.sim = sim
        self.reconciler = Reconciler(sessionmaker, driver, region, settings)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.clock: clock.Clock = clock.TwinClock(sim.clock) if sim is not None else clock.WallClock()
        """The fleet's clock (the twin's simulated time from now on, on a twin), installed by ``start``."""
        self._previous_clock: clock.Clock | None = None

    @classmethod
    def twin(
        cls,
        sessionmaker: orm.sessionmaker[orm.Session],
        region: str,
        *,
        node_counts: dict[str, int] | None = None,
        seed: int = 0,
        delays: bool = True,
        speed: float = 60.0,
        settings: phases.ReconcileSettings | None = None,
        state_file: Path | None = None,
        epoch_s: float | None = None,
    ) -> FleetRuntime:
        """A runtime on a new twin of ``region``. ``delays``: requests take their ``SimDelays`` in simulated
        time, on a clock running ``speed`` times faster than wall time; without delays they finish at once.
        ``state_file``: where the twin keeps what the driver did to its nodes (images, networks, mounts,
        firmware, power), restored at start and saved before every reconcile commit, so that, like real
        hardware, the twin survives a crash of the control plane. ``epoch_s``: the Unix time (s) the twin's
        simulated second 0 stands for (default: now); the fleet's clock reads ``epoch_s + simulated s``."""
        sim = SimRegion.build(region, node_counts, seed=seed, clock=SimClock(speed=speed if delays else None))
        driver = SimDriver(sim, SimDelays() if delays else SimDelays.off())
        if not firmware.manifest_path(region).exists():  # the twin's vendor images, published once
            firmware.publish(region, catalog.region(region).firmware_baseline, driver.firmware_image)
        firmware.load(region)  # a tampered or foreign manifest: refuse to start
        runtime = cls(sessionmaker, driver, region, sim, settings)
        runtime.clock = clock.TwinClock(sim.clock, epoch_s)
        if state_file is not None:
            runtime.state_file = state_file
            runtime._journal = twin_state.TwinJournal(state_file, sim)
            runtime._journal.restore()
            runtime._sim_driver = driver
            runtime.reconciler.before_commit = runtime.save_twin
        return runtime

    state_file: Path | None = None
    _journal: twin_state.TwinJournal | None = None
    _sim_driver: SimDriver | None = None

    def save_twin(self) -> None:
        """Save the state of the twin's nodes the driver touched since the last save (``twin_state``: one
        appended journal line, or a new snapshot now and then); nothing when it touched none."""
        if self._journal is None or self._sim_driver is None:
            return
        self._journal.save(self._sim_driver.take_touched())

    def enroll(self) -> int:
        """Enroll the driver's nodes that the database does not know and run their intake to the end
        (the twin's clock is moved forward so that intake never waits on wall time). Returns nodes enrolled."""
        node_types = {h: n.node_type for h, n in self.sim.nodes.items()} if self.sim else {}
        if self.sim is None and hasattr(self.driver, "node_types"):  # a twin served by another process
            node_types = self.driver.node_types()
        with self.sessionmaker() as s:
            count = enrollment.enroll(s, self.driver, self.region, node_types)
            s.commit()
        for _ in range(100):
            if self.reconciler.intake() == 0:
                break
            if self.sim is not None:
                self.sim.advance(600.0)
        return count

    def start(self) -> None:
        """Install the fleet's clock (node transitions, incidents and escalations are stamped with it), enroll,
        then reconcile in a daemon thread until ``stop``."""
        if self._previous_clock is None:
            self._previous_clock = clock.install(self.clock)
        self.enroll()
        self._stop.clear()
        self._thread = threading.Thread(
            target=self.reconciler.run, args=(self._stop,), name="velyrix-reconcile", daemon=True
        )
        self._thread.start()
        if self.sim is not None:
            self._ticker = threading.Thread(target=self._tick, name="velyrix-twin-clock", daemon=True)
            self._ticker.start()

    def _tick(self, interval_s: float = 1.0) -> None:
        # counters, precursors and spontaneous faults follow the (accelerated) clock even when nobody polls
        assert self.sim is not None
        while not self._stop.wait(interval_s):
            self.sim.advance(0.0)

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        if self._previous_clock is not None:
            clock.install(self._previous_clock)
            self._previous_clock = None

    def attach(self, app: Any) -> None:
        """Expose this runtime to the API (``app.state.fleet``: the sim and acceptance routes find it there).
        The routes themselves are mounted by the app factory (``velyrix.controlplane.api.app.ROUTERS``)."""
        app.state.fleet = self
