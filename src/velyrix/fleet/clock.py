"""The fleet's clock: the time at which node transitions, incidents and their escalations are stamped.

A real fleet runs on the wall clock (``WallClock``). A digital twin runs on its own accelerated clock, so a
month of simulated operation takes minutes: ``TwinClock`` maps the twin's simulated seconds
(``fleet.drivers.sim.clock.SimClock``) onto Unix time from an epoch. The process holds one current clock
(``current``, ``now_s``, ``now``); the fleet runtime installs a ``TwinClock`` when its fleet is a twin
(``velyrix.controlplane.reconcile.runtime.FleetRuntime.start``) and puts the previous one back on ``stop``.
Readers never ask which kind of fleet they run on: they read the clock.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Anything that tells the time in Unix seconds (UTC)."""

    def now_s(self) -> float: ...


class SimSeconds(Protocol):
    """What ``TwinClock`` reads of the twin: simulated seconds since it started (``SimClock.now``)."""

    def now(self) -> float: ...


class WallClock:
    """The machine's clock."""

    def now_s(self) -> float:
        return time.time()


class TwinClock:
    """The twin's simulated time as Unix seconds: ``epoch_s + sim.now()``.

    ``epoch_s``: the Unix time (s) that simulated second 0 stands for (default: the wall clock when the
    twin clock is made, so a twin started now begins now and then runs ahead at its speed)."""

    def __init__(self, sim: SimSeconds, epoch_s: float | None = None) -> None:
        self.sim = sim
        self.epoch_s = time.time() if epoch_s is None else epoch_s

    def now_s(self) -> float:
        return self.epoch_s + self.sim.now()


_lock = threading.Lock()
_current: Clock = WallClock()


def current() -> Clock:
    """The clock in use in this process."""
    return _current


def install(clock: Clock) -> Clock:
    """Make ``clock`` the current clock; returns the one it replaces (to ``install`` back)."""
    global _current
    with _lock:
        previous, _current = _current, clock
    return previous


def now_s() -> float:
    """The current clock's time, Unix seconds."""
    return _current.now_s()


def now() -> dt.datetime:
    """The current clock's time as an aware UTC datetime."""
    return dt.datetime.fromtimestamp(_current.now_s(), dt.UTC)
