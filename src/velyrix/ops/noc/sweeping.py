"""The escalation sweeper of the running service: a thread that runs ``incidents.sweep`` every
``sweep_s`` seconds in its own transaction and sends the due pages through a ``paging.Pager``. A page
that fails (SMTP down, webhook 5xx) rolls its sweep back, so it is tried again on the next one."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI

from velyrix.fleet import clock
from velyrix.ops.noc import escalation, incidents, paging

log = logging.getLogger("velyrix.noc")


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
        """One sweep, committed; returns the pages sent."""
        with self.app.state.sessionmaker() as s:
            sent = incidents.sweep(s, clock.now(), self.pager, self.policies)
            s.commit()
        self.sweeps += 1
        return sent

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                for line in self.once():
                    log.info("page %s", line)
            except Exception:  # the next sweep retries; the service keeps running
                log.exception("escalation sweep failed")

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
