"""Access logs off the event loop: a request's line is appended to a buffer as a tuple (no formatting,
no I/O, no thread woken on the loop) and a daemon thread writes what has gathered to the
``velyrix.access`` logger every ``FLUSH_S`` seconds. Waking a writer thread per request cost the loop a
hand-over of the interpreter lock per request (bench/bench_identity.py). Off with ``VELYRIX_ACCESS_LOG=0``."""

from __future__ import annotations

import collections
import logging
import threading
import time

log = logging.getLogger("velyrix.access")

Line = tuple[str, str, int, float, str, str]
"""(method, path, status, milliseconds, request id, key id or '-')."""
FLUSH_S = 0.2
"""Seconds between two writes of the gathered lines: how late a line reaches the log at most."""
MAX_PENDING = 100_000
"""Lines held at most; beyond, the oldest are dropped (and the drop is logged) rather than memory grown."""


class AccessLog:
    """``record`` buffers one line; the writer thread starts with the first one."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._pending: collections.deque[Line] = collections.deque(maxlen=MAX_PENDING)
        self._writer: threading.Thread | None = None
        self._dropped = 0

    def record(self, line: Line) -> None:
        if not self.enabled:
            return
        if self._writer is None:
            self._writer = threading.Thread(target=self._run, name="velyrix-access-log", daemon=True)
            self._writer.start()
        if len(self._pending) == MAX_PENDING:
            self._dropped += 1  # the append below pushes the oldest line out
        self._pending.append(line)  # atomic; wakes nothing

    def _run(self) -> None:
        while True:
            time.sleep(FLUSH_S)
            self.flush()

    def flush(self) -> int:
        """Write every gathered line now; returns how many."""
        pending = self._pending
        enabled = log.isEnabledFor(logging.INFO)
        written = 0
        while pending:
            method, path, status, ms, request_id, key = pending.popleft()
            written += 1
            if enabled:
                log.info("%s %s %s %.1fms request_id=%s key=%s", method, path, status, ms, request_id, key)
        dropped, self._dropped = self._dropped, 0
        if dropped:
            log.warning("%d access-log lines dropped (more than %d waiting)", dropped, MAX_PENDING)
        return written
