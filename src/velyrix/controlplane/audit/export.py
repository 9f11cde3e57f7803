"""SIEM export: the audit log's leaves, in order, to a syslog receiver over TLS (RFC 5425), through a
disk spool (``spool.py``).

What is guaranteed, and why. Syslog has no application-level acknowledgement, so the exporter learns
that a receiver has *read* a batch from how the TLS session ends: after the batch it sends TLS
``close_notify`` and waits for the receiver to close in turn. A receiver closes a session when it reads
its end, that is after reading every byte before it; had it closed with bytes unread, its kernel would
answer with a reset (TCP RST), and a receiver that closed before the bytes arrived resets them too. So a
clean close (the receiver's close_notify, or its FIN) confirms the whole batch and only then does the
position advance (on disk); a reset, a refused connection or a timeout leaves the position where it was
and the same spooled batch is sent again on a new session.

- Nothing is lost: every leaf is sent until a session carrying it ends cleanly (at least once), from the
  audit log itself (the source of truth) and the spool (the exporter may crash and restart).
- Nothing is sent twice when the receiver restarts or is unreachable between sessions: the exporter
  resends from the position the receiver is known to have read, not from what it wrote to the socket.
- The one case that repeats events: a receiver that stops in the middle of reading a session's batch
  (it read a part, was reset before the end). The batch is then sent again whole, with the same
  sequence numbers (``seq`` in the structured data, OCSF ``metadata.sequence``, CEF ``cn1``), so the
  repeat is visible; smaller ``batch_size`` narrows it. Receivers are not asked to deduplicate.
- "Read" is not "written to disk": what a receiver read and then lost in its own memory queue (a crash,
  not a graceful restart, which drains the queues of rsyslog and syslog-ng) is the receiver's loss; its
  disk-assisted queues close that gap on its side.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from velyrix import __version__, errors
from velyrix.controlplane.audit import spool as spool_mod
from velyrix.controlplane.audit import syslog

log = logging.getLogger("velyrix.audit.export")
Source = Callable[[int, int], dict[str, Any]]
"""``source(start, limit)``: a page of ``/v1/audit-log/entries`` (``items``, each with ``index`` and ``event``)."""


class DeliveryError(errors.VelyrixError):
    """A batch was not confirmed by the receiver (it stays spooled and is sent again)."""

    code = "siem_delivery_failed"
    http_status = 502
    user_error = False


@dataclass(frozen=True)
class Destination:
    """A syslog receiver over TLS: address, the CA bundle that verifies its certificate, optionally the
    name to check in it (default ``host``) and a client certificate (mutual TLS)."""

    host: str
    port: int
    ca_bundle: Path
    server_name: str | None = None
    client_cert: Path | None = None
    client_key: Path | None = None
    timeout_s: float = 10.0

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(self.ca_bundle))
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.client_cert:
            ctx.load_cert_chain(str(self.client_cert), str(self.client_key) if self.client_key else None)
        return ctx


def deliver(dest: Destination, data: bytes) -> None:
    """Send ``data`` in one TLS session and wait for the receiver's clean close; ``DeliveryError`` if the
    session did not end cleanly (reset, refused, timeout, certificate refused)."""
    where = f"{dest.host}:{dest.port}"
    try:
        with socket.create_connection((dest.host, dest.port), timeout=dest.timeout_s) as raw:
            # the close_notify after the batch is a small write: without NODELAY, Nagle holds it for the
            # receiver's delayed ACK (40 ms on Linux) and every session pays that wait
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tls = dest.context().wrap_socket(raw, server_hostname=dest.server_name or dest.host)
            tls.sendall(data)
            _await_close(tls)
    except ssl.SSLCertVerificationError as exc:
        raise DeliveryError(
            f"the receiver {where} presented a certificate that does not verify: {exc.verify_message}",
            hint="pass the CA bundle that signed the receiver's certificate (--ca-bundle)",
        ) from None
    except (OSError, ssl.SSLError) as exc:
        raise DeliveryError(f"the batch to {where} was not confirmed: {exc}") from None


def _await_close(tls: ssl.SSLSocket) -> None:
    """Send close_notify and wait for the receiver to close: its close_notify or a plain FIN (a clean
    end); a reset raises ``ConnectionResetError``."""
    try:
        tls.unwrap()
    except ssl.SSLEOFError:
        return  # FIN without close_notify: the receiver read to the end and closed
    except ssl.SSLError as exc:
        if "APPLICATION_DATA_AFTER_CLOSE_NOTIFY" not in str(exc) and "UNEXPECTED_EOF" not in str(exc):
            raise


class Exporter:
    """Delivers the audit log from ``source`` to ``dest`` in batches of at most ``batch_size`` leaves."""

    def __init__(
        self,
        source: Source,
        dest: Destination,
        spool_dir: Path,
        *,
        fmt: str = "ocsf",
        batch_size: int = 200,
        hostname: str | None = None,
    ) -> None:
        if fmt not in syslog.FORMATS:
            raise errors.UnknownNameError("format", fmt, syslog.FORMATS)
        self.source, self.dest, self.fmt, self.batch_size = source, dest, fmt, batch_size
        self.hostname = hostname or socket.gethostname()
        self.spool = spool_mod.Spool(spool_dir, f"{dest.host}:{dest.port}/{fmt}")
        self.delivered = 0

    def _next_batch(self) -> spool_mod.Batch | None:
        start = self.spool.position()
        items = self.source(start, self.batch_size)["items"]
        if not items:
            return None
        shown = [e for e in items if e.get("event") is not None]
        data = b"".join(syslog.frame(syslog.message(e, self.fmt, self.hostname, __version__)) for e in shown)
        return self.spool.stage(start, int(items[-1]["index"]) + 1, len(shown), data)

    def step(self) -> int | None:
        """Deliver one batch (the spooled one first); returns the events confirmed (None: nothing new)."""
        batch = self.spool.pending() or self._next_batch()
        if batch is None:
            return None
        if batch.data:
            deliver(self.dest, batch.data)
        self.spool.confirm(batch)
        self.delivered += batch.count
        return batch.count

    def drain(self) -> int:
        """Deliver until the log has nothing new; returns the events confirmed."""
        total = 0
        while (n := self.step()) is not None:
            total += n
        return total

    def follow(self, stop: threading.Event, interval_s: float = 1.0, max_backoff_s: float = 30.0) -> None:
        """Deliver until ``stop`` is set: poll every ``interval_s``; after a failure wait (doubling up to
        ``max_backoff_s``) and send the spooled batch again."""
        wait = interval_s
        while not stop.is_set():
            try:
                sent = self.step()
                wait = interval_s
            except DeliveryError as exc:
                log.warning("%s (retry in %.1f s)", exc.message, wait)
                stop.wait(wait)
                wait = min(max_backoff_s, wait * 2)
                continue
            if sent is None:
                stop.wait(interval_s)
