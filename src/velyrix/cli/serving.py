"""How ``velyrix server`` and ``velyrix up`` run uvicorn: uvloop and httptools, a listener that accepts every
waiting connection when its socket turns readable (``FairAcceptLoop``), and a bound on the requests served at
once, beyond which requests are answered 503 at once (``BoundedHttpToolsProtocol``).

Why (bench/bench_api_load.py; docs/benchmarks.md, "API under load: /healthz within 1 s"):

- libuv (under uvloop) accepts one connection per turn of the event loop. Under load a turn serves every
  connection with a request waiting (256 connections at ~0.5 ms each: ~130 ms a turn), so a burst of new
  connections (a client's pool opening, a load balancer's health check) waits in the kernel's accept queue
  for one turn per connection ahead of it: after 256 new connections, a new one waited over 5 s. Python's
  own loop accepts up to the backlog per turn; ``Listener`` does the same on uvloop.
- A request is read, queued and served in turns of the loop, so a turn's length grows with the requests in
  it, and a new connection needs about three turns (accepted, read, answered). Answering the requests
  beyond ``max_in_flight`` with a prebuilt 503 (``server_busy``, ``Retry-After``), without running the app,
  keeps every turn short; ``/healthz`` and ``/readyz`` are never refused, so they stay answerable while
  the server sheds load, and clients are told to come back instead of waiting seconds.

- A full (generation 2) collection of Python's cyclic garbage collector walks every object of the process,
  ~270,000 once the app is loaded, holding the loop for it (780 ms at load average 12 on the 2-core VM).
  ``serve`` freezes what exists at start (modules, routes, schemas: they live as long as the process), so
  that a full collection walks only what came later (76 ms in the same conditions); so does ``worker_app`` in
  each process of ``velyrix server --workers N``.

``uvicorn_options`` gives the keyword arguments every ``uvicorn.run`` of the CLI passes; ``serve`` runs one
app with them; ``WORKER_APP`` is the factory uvicorn calls in each worker process.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import gc
import json
import logging
import socket
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import uvloop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from velyrix import settings

log = logging.getLogger("velyrix.server")

ACCEPT_BATCH = 512
"""Connections accepted at most per turn of the loop and listening socket (the rest: next turn)."""
PAUSE_ON_EXHAUSTION_S = 1.0
"""Seconds a listener stops accepting when the process is out of file descriptors or memory (as asyncio)."""
BACKLOG = 2048
"""The kernel's accept queue per listening socket (uvicorn's default; capped by net.core.somaxconn)."""
_RESOURCE_ERRORS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


def uvicorn_options() -> dict[str, Any]:
    """``uvicorn.run`` keyword arguments: the fair-accept uvloop, httptools, warnings only (the access log is
    the app's own, ``controlplane/api/access_log.py``)."""
    return {
        "loop": f"{__name__}:FairAcceptLoop",
        "http": f"{__name__}:BoundedHttpToolsProtocol",  # uvloop and httptools: pinned in pyproject.toml
        "log_level": "warning",
        "backlog": BACKLOG,
    }


def freeze_start_up() -> None:
    """Collect the garbage of start-up, then freeze every object alive now out of the collector's later
    collections (they are never walked again; ``gc.get_freeze_count()`` tells how many)."""
    gc.collect()
    gc.freeze()


def serve(app: Any, host: str, port: int, **options: Any) -> None:
    """Run ``app`` on ``host:port`` with ``uvicorn_options`` (and ``options``, e.g. TLS) until stopped; the
    objects alive at start are frozen out of the garbage collector's full collections first."""
    import uvicorn

    freeze_start_up()
    uvicorn.run(app, host=host, port=port, **uvicorn_options(), **options)


WORKER_APP = f"{__name__}:worker_app"
"""The app factory of ``velyrix server --workers N`` (``uvicorn.run(WORKER_APP, factory=True, ...)``)."""


def worker_app() -> Any:
    """The app of one worker process of ``velyrix server --workers N``, as the single-process server builds it
    (``ops.service.create_app`` with the escalation sweeper every ``VELYRIX_NOC_SWEEP_S``: one sweep at a time
    across workers, ``ops/noc/sweeping.py``), its start-up objects frozen as ``serve`` freezes them."""
    from velyrix.ops.service import create_app

    app = create_app(noc_sweep_s=settings.load().noc.sweep_s)
    freeze_start_up()
    return app


EXEMPT_PATHS = frozenset({"/healthz", "/readyz"})
"""Never refused for load: the probes a load balancer and an orchestrator ask."""
RETRY_AFTER_S = 1
"""What a refused request is told to wait before retrying (``Retry-After``, seconds)."""
LOG_EVERY_S = 10.0
"""Seconds between two log lines counting the requests refused meanwhile."""
_BUSY_BODY = json.dumps(
    {
        "type": "https://velyrix.dev/problems/server_busy",  # as controlplane/api/problems.py's PROBLEM_BASE
        "title": "server busy",
        "status": 503,
        "code": "server_busy",
        "detail": "the request waited its limit for one of the requests the server serves at once; nothing was done",
        "hint": "retry after Retry-After seconds",
    }
).encode()
_BUSY_START = {
    "type": "http.response.start",
    "status": 503,
    "headers": [
        (b"content-type", b"application/problem+json"),
        (b"content-length", str(len(_BUSY_BODY)).encode()),
        (b"retry-after", str(RETRY_AFTER_S).encode()),
    ],
}
_BUSY_BODY_MESSAGE = {"type": "http.response.body", "body": _BUSY_BODY}


async def _busy(scope: Any, receive: Any, send: Any) -> None:
    """The refusal, an ASGI app of two prebuilt messages (the request's body, if any, is left unread)."""
    await send(_BUSY_START)
    await send(_BUSY_BODY_MESSAGE)


class Refusals:
    """How many requests were refused for load (``total``), logged once per ``LOG_EVERY_S`` at most."""

    def __init__(self) -> None:
        self.total, self._since_log, self._logged_at = 0, 0, time.monotonic()

    def count(self, limit: int, wait_s: float) -> None:
        self.total += 1
        self._since_log += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_EVERY_S:
            log.warning(
                "answered %d requests 503 server_busy in the last %.0f s: each waited %g s behind %d served at once",
                self._since_log, now - self._logged_at, wait_s, limit,
            )  # fmt: skip
            self._since_log, self._logged_at = 0, now


class Admission:
    """One server's requests in flight: at most ``limit`` started and not yet answering (each counts from its
    task's start until its response starts, so a stream that has begun answering no longer counts, or until its
    app returns); the others wait in arrival order, each at most ``wait_s``, then are answered ``_busy``.

    A waiting request costs the loop nothing until it starts; its connection sends nothing more meanwhile
    (HTTP/1.1 answers in order), so a client with many connections cannot crowd the loop with requests."""

    def __init__(self, limit: int, wait_s: float) -> None:
        self.limit, self.wait_s = limit, wait_s
        self.running = 0
        self.refusals = Refusals()
        self._waiting: collections.deque[tuple[float, BoundedHttpToolsProtocol, Any, Any]] = collections.deque()
        self._sweep: asyncio.TimerHandle | None = None

    def admit(self, protocol: BoundedHttpToolsProtocol, cycle: Any, app: Any) -> None:
        """Start ``app`` on ``cycle`` now if fewer than ``limit`` run, else queue it."""
        if self.running < self.limit and not self._waiting:
            self._start(protocol, cycle, app)
            return
        self._waiting.append((time.perf_counter(), protocol, cycle, app))
        if self._sweep is None:
            self._sweep = protocol.loop.call_later(self.wait_s, self._expire)

    def _start(self, protocol: BoundedHttpToolsProtocol, cycle: Any, app: Any) -> None:
        self.running += 1
        answered = False

        def done() -> None:
            nonlocal answered
            if not answered:
                answered = True
                self.running -= 1
                self._next()

        async def send_counted(message: dict[str, Any], send: Any) -> None:
            if message["type"] == "http.response.start":
                done()
            await send(message)

        async def run(scope: Any, receive: Any, send: Any) -> None:
            try:
                await app(scope, receive, lambda message: send_counted(message, send))
            finally:
                done()

        protocol.start_now(cycle, run)

    def _next(self) -> None:
        """Start the oldest waiting requests while there is room (those gone away are dropped)."""
        while self._waiting and self.running < self.limit:
            queued_at, protocol, cycle, app = self._waiting.popleft()
            if cycle.disconnected or protocol.transport.is_closing():
                continue
            if time.perf_counter() - queued_at > self.wait_s:
                self._refuse(protocol, cycle)
            else:
                self._start(protocol, cycle, app)

    def _expire(self) -> None:
        """Answer ``_busy`` to every request that waited longer than ``wait_s``; re-armed while any waits."""
        self._sweep = None
        now = time.perf_counter()
        while self._waiting and now - self._waiting[0][0] > self.wait_s:
            _, protocol, cycle, _ = self._waiting.popleft()
            if not (cycle.disconnected or protocol.transport.is_closing()):
                self._refuse(protocol, cycle)
        if self._waiting:
            oldest = self._waiting[0][0]
            self._sweep = self._waiting[0][1].loop.call_later(max(0.0, oldest + self.wait_s - now), self._expire)

    def _refuse(self, protocol: BoundedHttpToolsProtocol, cycle: Any) -> None:
        self.refusals.count(self.limit, self.wait_s)
        protocol.start_now(cycle, _busy)


_ADMISSIONS: weakref.WeakKeyDictionary[Any, Admission] = weakref.WeakKeyDictionary()
"""Per uvicorn server (its ``ServerState``): a test may run several servers in one process."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol whose requests go through their server's ``Admission`` (``EXEMPT_PATHS``
    start at once and are not counted). The limits are ``settings.ApiSettings`` ``max_in_flight`` and
    ``queue_wait_s`` (``VELYRIX_API_MAX_IN_FLIGHT``, ``VELYRIX_API_QUEUE_WAIT_S``), read when the first request
    of a server arrives; ``max_in_flight`` 0: no limit."""

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if cycle.scope["path"] in EXEMPT_PATHS:
            self.start_now(cycle, app)
            return
        admission = _ADMISSIONS.get(self.server_state)
        if admission is None:
            api = settings.load().api
            admission = _ADMISSIONS[self.server_state] = Admission(api.max_in_flight, api.queue_wait_s)
        if admission.limit <= 0:
            self.start_now(cycle, app)
        else:
            admission.admit(self, cycle, app)

    def start_now(self, cycle: Any, app: Any) -> None:
        """uvicorn's own start of the request's task."""
        super()._start_asgi_task(cycle, app)


class FairAcceptLoop(uvloop.Loop):
    """uvloop, except that ``create_server`` on a host/port or a bound socket (with or without TLS) listens
    through ``Listener`` (accept in batches); other options go through uvloop's own server."""

    async def create_server(  # type: ignore[override]
        self,
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        host: str | None = None,
        port: int | None = None,
        *,
        sock: socket.socket | None = None,
        backlog: int = 100,
        ssl: Any = None,
        **kwargs: Any,
    ) -> asyncio.AbstractServer:
        if kwargs or (sock is None and port is None):
            inner: Any = super().create_server
            server: asyncio.AbstractServer = await inner(
                protocol_factory, host, port, sock=sock, backlog=backlog, ssl=ssl, **kwargs
            )
            return server
        sockets = [sock] if sock is not None else await self._bind(host, int(port or 0))
        for listening in sockets:
            listening.listen(backlog)
        return Listener(self, sockets, protocol_factory, ssl)

    async def _bind(self, host: str | None, port: int) -> list[socket.socket]:
        """One listening socket per address ``host`` resolves to (all interfaces when None), as asyncio binds."""
        infos = await self.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        sockets: list[socket.socket] = []
        try:
            for family, kind, proto, _, address in dict.fromkeys(infos):
                listening = socket.socket(family, kind, proto)
                sockets.append(listening)
                listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    listening.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                listening.bind(address)
        except OSError:
            for listening in sockets:
                listening.close()
            raise
        return sockets


class Listener(asyncio.AbstractServer):
    """Listening sockets served on ``loop``: each time one is readable, up to ``ACCEPT_BATCH`` connections are
    accepted and handed to ``loop.connect_accepted_socket`` with a new protocol from ``protocol_factory``
    (and the TLS context ``ssl``, if any: the handshake then runs in the connection's task)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sockets: Iterable[socket.socket],
        protocol_factory: Callable[[], asyncio.BaseProtocol],
        ssl: Any = None,
    ) -> None:
        self._loop, self._factory, self._ssl = loop, protocol_factory, ssl
        self._sockets = tuple(sockets)
        self._serving = False
        self._handshakes: set[asyncio.Task[Any]] = set()
        self._start()

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return self._sockets

    def _start(self) -> None:
        for listening in self._sockets:
            listening.setblocking(False)
            self._loop.add_reader(listening.fileno(), self._accept, listening)
        self._serving = True

    def _accept(self, listening: socket.socket) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue  # the client gave up while queued
            except OSError as exc:
                if exc.errno not in _RESOURCE_ERRORS:
                    raise
                log.error("not accepting connections for %g s: %s", PAUSE_ON_EXHAUSTION_S, exc)
                self._loop.remove_reader(listening.fileno())
                self._loop.call_later(PAUSE_ON_EXHAUSTION_S, self._resume, listening)
                return
            conn.setblocking(False)
            task = self._loop.create_task(self._loop.connect_accepted_socket(self._factory, conn, ssl=self._ssl))
            self._handshakes.add(task)
            task.add_done_callback(self._connected)

    def _connected(self, task: asyncio.Task[Any]) -> None:
        self._handshakes.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.debug("an accepted connection failed before it was served: %s", task.exception())

    def _resume(self, listening: socket.socket) -> None:
        if self._serving and listening.fileno() != -1:
            self._loop.add_reader(listening.fileno(), self._accept, listening)

    def close(self) -> None:
        """Stop accepting and close the listening sockets (connections already served stay open)."""
        if not self._serving:
            return
        self._serving = False
        for listening in self._sockets:
            if listening.fileno() != -1:
                self._loop.remove_reader(listening.fileno())
                listening.close()

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def is_serving(self) -> bool:
        return self._serving

    async def start_serving(self) -> None:
        if not self._serving:
            raise RuntimeError("a closed listener does not start again")

    async def serve_forever(self) -> None:
        while self._serving:
            await asyncio.sleep(1.0)

    async def wait_closed(self) -> None:
        for task in list(self._handshakes):
            await asyncio.wait([task])
