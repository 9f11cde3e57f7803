"""Access-log lines reach the ``velyrix.access`` logger from the writer thread, in order, without the
request waking it (``api/access_log.py``); nothing is written when the log is off. Nothing here is timed:
the test polls for the lines."""

from __future__ import annotations

import logging
import time

from velyrix.controlplane.api import access_log


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _watch() -> tuple[logging.Logger, _Lines]:
    logger = logging.getLogger("velyrix.access")
    handler = _Lines()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return logger, handler


def test_the_writer_thread_writes_every_recorded_line_in_order() -> None:
    logger, handler = _watch()
    try:
        log = access_log.AccessLog(enabled=True)
        for n in range(3):
            log.record(("GET", f"/v1/clusters/c{n}", 200, 1.25, f"req_{n}", "key_1"))
        deadline = time.monotonic() + 30

        def ours() -> list[str]:  # other tests' servers in this worker may log on the same logger
            return [line for line in handler.lines if line.endswith("key=key_1")]

        while len(ours()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ours() == [f"GET /v1/clusters/c{n} 200 1.2ms request_id=req_{n} key=key_1" for n in range(3)]
    finally:
        logger.removeHandler(handler)


def test_an_access_log_that_is_off_records_nothing() -> None:
    logger, handler = _watch()
    try:
        log = access_log.AccessLog(enabled=False)
        log.record(("GET", "/healthz", 200, 0.1, "req_x", "-"))
        assert log.flush() == 0 and handler.lines == []
    finally:
        logger.removeHandler(handler)
