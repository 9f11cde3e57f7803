"""The twin's clock: simulated seconds, advanced by hand or running faster than wall time."""

from __future__ import annotations

import time


class SimClock:
    """Simulated time in seconds since the twin started.

    ``speed=None`` (default): the clock moves only through ``advance`` — fully deterministic, for tests.
    ``speed=60.0``: it also runs on its own, 60 simulated seconds per wall second (``velyrix up``, demo).
    """

    def __init__(self, start_s: float = 0.0, speed: float | None = None) -> None:
        self._offset_s = start_s
        self.speed = speed
        self._wall0 = time.monotonic()

    def now(self) -> float:
        """Current simulated time (s)."""
        if self.speed:
            return self._offset_s + (time.monotonic() - self._wall0) * self.speed
        return self._offset_s

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds`` (>= 0) on top of any running speed; returns the new time."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self._offset_s += seconds
        return self.now()
