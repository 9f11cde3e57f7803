"""The gate that keeps API requests from ever waiting for a database connection on the event loop.

A request that needs the database first takes one of ``Gate.slots`` (fewer than the pool holds, so that a
request holding a slot always finds a connection, the rest being kept for background work such as audit
checkpoints). It waits at most ``wait_s`` for a slot, then answers 503 with ``Retry-After``
(``PoolExhaustedError``) instead of stalling; ``RequestIdMiddleware`` gives the slot back once the
answer is sent and the request's connection is back in the pool.
"""

from __future__ import annotations

import asyncio
import logging

from velyrix import errors

log = logging.getLogger("velyrix.api")


class PoolExhaustedError(errors.VelyrixError):
    """Every database connection of the API is in use for longer than the bounded wait."""

    code = "database_busy"
    http_status = 503
    user_error = False
    template = "all {slots} database connections of the API stayed in use for {wait_s:g} s; nothing was done"


class Gate:
    """At most ``slots`` requests hold database connections at once; the others wait ``wait_s`` at most.

    One semaphore per event loop (a test client may run several loops in one process)."""

    def __init__(self, slots: int, wait_s: float) -> None:
        self.slots, self.wait_s = slots, wait_s
        self._semaphores: dict[int, asyncio.Semaphore] = {}

    def _semaphore(self) -> asyncio.Semaphore:
        key = id(asyncio.get_running_loop())
        found = self._semaphores.get(key)
        if found is None:
            found = self._semaphores[key] = asyncio.Semaphore(self.slots)
        return found

    async def acquire(self, request_id: str) -> asyncio.Semaphore:
        """Take a slot (returned by ``release``) or raise ``PoolExhaustedError`` after ``wait_s``."""
        semaphore = self._semaphore()
        if not semaphore.locked():
            await semaphore.acquire()  # a free slot: taken without yielding
            return semaphore
        try:
            await asyncio.wait_for(semaphore.acquire(), self.wait_s)
        except TimeoutError:
            log.warning("request %s: 503, all %d database slots busy for %g s", request_id, self.slots, self.wait_s)
            raise PoolExhaustedError(
                slots=self.slots, wait_s=self.wait_s, hint="retry after Retry-After seconds"
            ) from None
        return semaphore

    @staticmethod
    def release(semaphore: asyncio.Semaphore) -> None:
        semaphore.release()
