"""The escalation sweeper of the running service: a thread that runs ``incidents.sweep`` every
``sweep_s`` seconds in its own transaction and sends the due pages through a ``paging.Pager``. A page
that fails (SMTP down, webhook 5xx) rolls its sweep back, so it is tried again on the next one.

Every ``velyrix server`` replica on one PostgreSQL runs a sweeper; a sweep runs under the claim ``noc/sweep``
(``controlplane.reconcile.locks.try_claim``: a transaction-scoped advisory lock), so while one replica's sweep
sends and commits, another's skips, and the next one reads the counters it committed: a due page is sent once,
not once per replica (tests/noc/test_sweep_replicas.py)."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from velyrix.controlplane.reconcile import locks
from velyrix.fleet import clock
from velyrix.ops.noc import escalation, incidents, paging

log = logging.getLogger("velyrix.noc")


MIN_INTERVAL_S = 0.05
"""The shortest wall time between two sweeps (each is one transaction)."""


def interval_for(speed: float, sweep_s: float) -> float:
    """Wall seconds between sweeps on a clock running ``speed`` times wall time: ``sweep_s`` (the setting;
    0: no sweeps), but at most one simulated minute (escalation delays are whole minutes), and never below
    ``MIN_INTERVAL_S``: at ``speed`` 20,000 a page is sent at most 0.05 x 20,000 s = 17 simulated minutes
    after it was due (its timeline entry carries when it was due)."""
    if sweep_s <= 0:
        return 0.0
    return max(MIN_INTERVAL_S, min(sweep_s, 60.0 / max(speed, 1e-9)))


class Sweeper:
    """Sweeps ``app``'s database every ``interval_s`` seconds until ``stop()``."""

    def __init__(
        self, app: FastAPI, interval_s: float, pager: incidents.Pager, policies: dict[str, Any] | None = None
    ) -> None:
        self.app, self.interval_s, self.pager, self.policies = app, interval_s, pager, policies
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="velyrix-noc-sweeper", daemon=True)
        self.sweeps = 0

    def once(self) -> list[str]:
        """One sweep, committed; returns the pages sent (none when another replica's sweep holds the claim)."""
        with self.app.state.sessionmaker() as s:
            if not locks.try_claim(s, "noc/sweep"):
                return []
            sent = incidents.sweep(s, clock.now(), self.pager, self.policies)
            s.commit()
        self.sweeps += 1
        return sent

    def _run(self) -> None:
        last_error, logged_at = "", 0.0
        while not self._stop.wait(self.interval_s):
            try:
                for line in self.once():
                    log.info("page %s", line)
            except Exception as exc:  # the next sweep retries; the service keeps running
                if str(exc) != last_error or time.monotonic() - logged_at > 60:  # the same failure once a minute
                    log.exception("escalation sweep failed")
                    last_error, logged_at = str(exc), time.monotonic()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def install(app: FastAPI, interval_s: float, pager: incidents.Pager | None = None) -> FastAPI:
    """Run a ``Sweeper`` for the app's lifetime (ASGI lifespan); ``app.state.noc_sweeper`` holds it. The
    pager and the extra escalation policies come from the settings (``NocSettings``)."""
    from velyrix import settings

    noc = settings.load().noc
    if pager is None:
        pager = paging.Pager(smtp_host=noc.smtp_host, smtp_port=noc.smtp_port, routing_key=noc.pagerduty_routing_key)
    sweeper = Sweeper(app, interval_s, pager, escalation.load_overrides(noc.escalation_policies))
    app.state.noc_sweeper = sweeper
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        sweeper.start()
        try:
            async with inner(a) as state:
                yield state
        finally:
            sweeper.stop()

    app.router.lifespan_context = lifespan
    return app
