"""A small keep-alive HTTP/1.1 server for the fleet exporter's per-node targets (``velyrix.agent.fleet_targets``).

Prometheus scrapes every target of a job through one HTTP client that keeps its connections open between
scrapes (HTTP/1.1 keep-alive), so 10,000 per-node targets on one ``host:port`` are served over a handful of
long-lived connections. ``KeepAliveServer`` runs an asyncio event loop (uvloop when installed) in its own
thread; requests are parsed by httptools (llhttp). What it serves comes from two callables:

- ``fast(path) -> bytes | None``: the complete response (status line, headers, body) for a raw request path,
  taken when the request is a GET that accepts gzip on a kept-alive connection: Prometheus's scrape. With a
  ``dict.get`` here a scrape costs the parse, one dictionary lookup and one ``write``.
- ``handler(path, accepts_gzip) -> Reply | Callable[[], Reply]``: every other request. A callable is run in a
  worker thread (it may block: a node rendered for the first time takes the region's locks) and its reply is
  sent when it is done, responses staying in request order on the connection.

Limits, since anything can connect: a request head over ``MAX_REQUEST_BYTES`` answers 431 and closes; a
request not complete within ``REQUEST_TIMEOUT_S``, or a connection idle for ``idle_timeout_s``, is closed; at
most ``MAX_CONNECTIONS`` connections (more are refused with 503); only GET and HEAD (405 otherwise); a
malformed request answers 400 and closes. A client that stops reading stops being read (flow control).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import gzip
import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import cast

import httptools

from velyrix import errors

log = logging.getLogger("velyrix.agent")

MAX_REQUEST_BYTES = 16 * 1024
"""Largest request head (request line and headers) accepted, bytes; a scrape's is ~300."""
REQUEST_TIMEOUT_S = 10.0
"""Seconds a request may take to arrive whole (a slow or stalled client is dropped after this)."""
IDLE_TIMEOUT_S = 300.0
"""Default seconds a kept-alive connection may stay idle: longer than any sane scrape interval (Prometheus's
own client keeps idle connections 5 minutes), so scrapes reuse their connections."""
MAX_CONNECTIONS = 4096
"""Open connections at most; Prometheus needs about as many as scrapes in flight at once."""
LAG_TICK_S = 0.1
"""Period of the timer whose lateness is recorded in ``KeepAliveServer.lags_s``."""
MAX_QUEUED = 64
"""Pipelined requests waiting for a deferred reply on one connection before reading from it pauses."""


@dataclass(frozen=True)
class Reply:
    """One response: ``body`` gzipped when ``gzipped`` (sent as is to clients that accept gzip)."""

    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    gzipped: bool = False


Handler = Callable[[str, bool], "Reply | Callable[[], Reply]"]
FastPath = Callable[[bytes], "bytes | None"]


def response_bytes(reply: Reply, *, keep_alive: bool = True, head: bool = False) -> bytes:
    """The HTTP/1.1 response of ``reply``, headers and body (no body for ``head``)."""
    lines = [
        f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}",
        f"Content-Type: {reply.content_type}",
        f"Content-Length: {len(reply.body)}",
    ]
    if reply.gzipped:
        lines.append("Content-Encoding: gzip")
    if not keep_alive:
        lines.append("Connection: close")
    head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")
    return head_bytes if head else head_bytes + reply.body


def _plain(status: int, text: str) -> Reply:
    return Reply(status, text.encode())


def _encoded(reply: Reply, accepts_gzip: bool) -> Reply:
    """``reply`` with its body decompressed for a client that does not accept gzip."""
    if reply.gzipped and not accepts_gzip:
        return Reply(reply.status, gzip.decompress(reply.body), reply.content_type)
    return reply


@dataclass
class _Queued:
    """A response waiting its turn on a connection: ``data``, or the reply of ``future`` once done."""

    future: concurrent.futures.Future[Reply] | None
    data: bytes
    keep_alive: bool
    head: bool
    accepts_gzip: bool


class _Connection(asyncio.Protocol):
    """One client connection: parses requests and writes their responses in order."""

    def __init__(self, server: KeepAliveServer) -> None:
        self.server = server
        self.loop = server.loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.accepts_gzip = False
        self.head_size = 0  # bytes of the request line's target and the headers so far
        self.received = 0  # bytes since the last complete request
        self.busy_since: float | None = None  # loop time a request began arriving (None: idle)
        self.last_active = self.loop.time()
        self.queue: collections.deque[_Queued] = collections.deque()
        self.closing = False
        self.write_paused = False
        self.read_paused = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is one in all but its class
        transport = self.transport
        if len(self.server.connections) >= MAX_CONNECTIONS:
            transport.write(response_bytes(_plain(503, "too many connections\n"), keep_alive=False))
            transport.close()
            self.closing = True
            return
        self.server.connections.add(self)
        self.server.accepted += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.server.connections.discard(self)

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        if self.busy_since is None:
            self.busy_since = self.loop.time()
        self.received += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError:  # a fault of ours, not the client's
            log.exception("answering a request failed")
            if not self.closing:
                self._fail(500, "internal error; see the exporter's log\n")
            return
        except (httptools.HttpParserError, httptools.HttpParserUpgrade):
            if not self.closing:
                self._fail(400, "malformed request\n")
            return
        if self.received > MAX_REQUEST_BYTES and not self.closing:
            self._fail(431, f"request head over {MAX_REQUEST_BYTES} bytes\n")

    def pause_writing(self) -> None:
        self.write_paused = True
        self._pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        if len(self.queue) < MAX_QUEUED:
            self._resume_reading()

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.url = b""
        self.accepts_gzip = False
        self.head_size = 0

    def on_url(self, url: bytes) -> None:
        self.url += url
        self.head_size += len(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.head_size += len(name) + len(value) + 4
        if name.lower() == b"accept-encoding" and b"gzip" in value.lower():
            self.accepts_gzip = True

    def on_message_complete(self) -> None:
        if self.closing:  # pipelined after a request that closes the connection
            return
        self.received = 0
        self.busy_since = None
        self.last_active = self.loop.time()
        self.server.requests += 1
        if self.head_size > MAX_REQUEST_BYTES:  # arrived whole in one read: refused all the same
            self._fail(431, f"request head over {MAX_REQUEST_BYTES} bytes\n")
            return
        method = self.parser.get_method()
        keep_alive = self.parser.should_keep_alive()
        if method == b"GET" and keep_alive and self.accepts_gzip and not self.queue:
            cached = self.server.fast(self.url)
            if cached is not None:
                assert self.transport is not None
                self.transport.write(cached)
                return
        if method not in (b"GET", b"HEAD"):
            self._respond(None, response_bytes(_plain(405, "only GET and HEAD\n"), keep_alive=False), keep_alive=False)
            return
        path = self.url.split(b"?", 1)[0].decode("latin-1")
        answer = self.server.handler(path, self.accepts_gzip)
        head = method == b"HEAD"
        if isinstance(answer, Reply):
            reply = _encoded(answer, self.accepts_gzip)
            self._respond(None, response_bytes(reply, keep_alive=keep_alive, head=head), keep_alive=keep_alive)
            return
        future = self.server.executor.submit(answer)
        future.add_done_callback(self._wake)
        self._respond(future, b"", keep_alive=keep_alive, head=head, accepts_gzip=self.accepts_gzip)

    # internals
    def _wake(self, _: object) -> None:
        """A deferred reply is done (in a worker thread): flush on the loop, unless the server has closed."""
        try:
            self.loop.call_soon_threadsafe(self._flush)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            pass

    def _respond(
        self,
        future: concurrent.futures.Future[Reply] | None,
        data: bytes,
        *,
        keep_alive: bool,
        head: bool = False,
        accepts_gzip: bool = False,
    ) -> None:
        """Queue a response (``data``, or ``future``'s reply once done) and write what is ready, in order."""
        self.queue.append(_Queued(future, data, keep_alive, head, accepts_gzip))
        if len(self.queue) >= MAX_QUEUED:
            self._pause_reading()
        self._flush()

    def _flush(self) -> None:
        while self.queue and not self.closing:
            item = self.queue[0]
            data = item.data
            if item.future is not None:
                if not item.future.done():
                    return
                try:
                    reply = _encoded(item.future.result(), item.accepts_gzip)
                except Exception:  # a rendering that failed answers 500; the connection goes on
                    log.exception("answering a request failed")
                    reply = _plain(500, "internal error; see the exporter's log\n")
                data = response_bytes(reply, keep_alive=item.keep_alive, head=item.head)
            self.queue.popleft()
            assert self.transport is not None
            self.transport.write(data)
            if not item.keep_alive:
                self._close()
                return
        if not self.write_paused:
            self._resume_reading()

    def _pause_reading(self) -> None:
        if self.transport is not None and not self.closing and not self.read_paused:
            self.read_paused = True
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        if self.transport is not None and not self.closing and self.read_paused:
            self.read_paused = False
            self.transport.resume_reading()

    def _fail(self, status: int, text: str) -> None:
        assert self.transport is not None
        self.transport.write(response_bytes(_plain(status, text), keep_alive=False))
        self._close()

    def _close(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.close()

    def sweep(self, now: float, idle_timeout_s: float) -> None:
        """Close this connection if a request is overdue or it has been idle too long."""
        if self.busy_since is not None and now - self.busy_since > REQUEST_TIMEOUT_S:
            self._fail(408, f"request not complete within {REQUEST_TIMEOUT_S:.0f} s\n")
        elif self.busy_since is None and not self.queue and now - self.last_active > idle_timeout_s:
            self._close()


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # uvloop is pinned; plain asyncio serves the same, a little slower
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


class KeepAliveServer:
    """``fast`` and ``handler`` (see the module doc) served on ``host:port`` (0: a free port) from a thread of
    its own once ``start()`` is called; ``close()`` stops it. ``accepted`` and ``requests`` count connections
    and requests so far."""

    def __init__(
        self,
        handler: Handler,
        fast: FastPath,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        hint: str = "choose another port (0 picks a free one)",
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        name: str = "fleet-http",
    ) -> None:
        """A port in use raises ``InvalidInputError`` with ``hint``."""
        self.handler = handler
        self.fast = fast
        self.idle_timeout_s = idle_timeout_s
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self.sock = socket.create_server((host, port), family=family, backlog=1024)
        except OSError as exc:
            raise errors.InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror}", hint=hint) from exc
        self.host, self.port = host, int(self.sock.getsockname()[1])
        self.connections: set[_Connection] = set()
        self.accepted = 0
        self.requests = 0
        self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"{name}-work")
        self.loop = _new_loop()
        self.lags_s: collections.deque[float] = collections.deque(maxlen=36_000)
        """How late the loop woke for a 0.1-s timer, seconds, for the last hour: the wait a request arriving
        then had before being read (the process not scheduled, or another thread holding the GIL)."""
        self.native_id: int | None = None
        """The serving thread's native id (its CPU time is in /proc/self/task/<id>/stat)."""
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"{name}:{self.port}", daemon=True)

    def start(self) -> KeepAliveServer:
        """Start serving (the port is bound from construction; connections wait in its backlog until now)."""
        self.thread.start()
        self._ready.wait()
        return self

    def _run(self) -> None:
        self.native_id = threading.get_native_id()
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(self.loop.create_server(lambda: _Connection(self), sock=self.sock))
        sweeper = self.loop.create_task(self._sweep())
        watcher = self.loop.create_task(self._watch_lag())
        self._ready.set()
        try:
            self.loop.run_forever()
        finally:
            sweeper.cancel()
            watcher.cancel()
            server.close()
            for conn in list(self.connections):
                conn._close()
            self.loop.run_until_complete(server.wait_closed())
            self.loop.close()

    async def _sweep(self) -> None:
        every_s = min(self.idle_timeout_s / 4, REQUEST_TIMEOUT_S / 4)
        while True:
            await asyncio.sleep(every_s)
            now = self.loop.time()
            for conn in list(self.connections):
                conn.sweep(now, self.idle_timeout_s)

    async def _watch_lag(self) -> None:
        while True:
            start = self.loop.time()
            await asyncio.sleep(LAG_TICK_S)
            self.lags_s.append(max(0.0, self.loop.time() - start - LAG_TICK_S))

    def close(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
        else:
            self.sock.close()
            self.loop.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
