"""Access logs off the event loop: a request's line is queued as a tuple (no formatting, no I/O on the
loop) and a daemon thread writes it to the ``velyrix.access`` logger. Off with ``VELYRIX_ACCESS_LOG=0``."""

from __future__ import annotations

import logging
import queue
import threading

log = logging.getLogger("velyrix.access")

Line = tuple[str, str, int, float, str, str]
"""(method, path, status, milliseconds, request id, key id or '-')."""


class AccessLog:
    """``record`` queues one line; the writer thread starts with the first one."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._queue: queue.SimpleQueue[Line] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None

    def record(self, line: Line) -> None:
        if not self.enabled:
            return
        if self._writer is None:
            self._writer = threading.Thread(target=self._write, name="velyrix-access-log", daemon=True)
            self._writer.start()
        self._queue.put(line)

    def _write(self) -> None:
        while True:
            method, path, status, ms, request_id, key = self._queue.get()
            if log.isEnabledFor(logging.INFO):
                log.info("%s %s %s %.1fms request_id=%s key=%s", method, path, status, ms, request_id, key)
