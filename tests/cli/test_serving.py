"""How ``velyrix server`` / ``velyrix up`` serve (``velyrix.cli.serving``), on real uvicorn servers on loopback:
the listener accepts every waiting connection at once; requests beyond the in-flight limit wait and are answered
503 ``server_busy`` with ``Retry-After`` once their wait is over, or served when room frees first; ``/healthz``
answers while the limit is reached; the single-process server and each worker of ``--workers N`` freeze their
start-up objects out of the garbage collector's full collections."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from velyrix.cli import serving
from velyrix.testing import postgres

HOLD = "/test/hold"


class Holding:
    """The velyrix app, plus ``GET /test/hold``, which stays unanswered until ``release()``."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.held = threading.Event()
        self._release: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != HOLD:
            await self.app(scope, receive, send)
            return
        self._loop, self._release = asyncio.get_running_loop(), asyncio.Event()
        self.held.set()
        await self._release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"4")]})
        await send({"type": "http.response.body", "body": b"done"})

    def release(self) -> None:
        assert self._loop is not None and self._release is not None
        self._loop.call_soon_threadsafe(self._release.set)


@contextlib.contextmanager
def _served(app: Any) -> Iterator[int]:
    port = postgres.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **serving.uvicorn_options()))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _send(port: int, path: str) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=60)
    conn.sendall(f"GET {path} HTTP/1.1\r\nHost: test\r\n\r\n".encode())
    return conn


def _answer(conn: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lower-case names) and body of the one response on ``conn``, which is then closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        assert chunk, f"connection closed after {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict((k.strip().lower(), v.strip()) for k, v in (line.split(":", 1) for line in lines[1:]))
    while len(body) < int(headers.get("content-length", "0")):
        chunk = conn.recv(65536)
        assert chunk
        body += chunk
    conn.close()
    return int(lines[0].split()[1]), headers, body


@pytest.fixture
def holding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Holding:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("VELYRIX_DATABASE_URL", raising=False)
    monkeypatch.setenv("VELYRIX_API_MAX_IN_FLIGHT", "1")
    from velyrix.controlplane.api import create_app

    app = create_app()
    yield Holding(app)
    app.state.engine.dispose()


def test_a_request_beyond_the_limit_is_answered_503_with_retry_after_while_healthz_answers(
    holding: Holding, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VELYRIX_API_QUEUE_WAIT_S", "0.2")
    with _served(holding) as port:
        held = _send(port, HOLD)
        assert holding.held.wait(30)
        refused = _answer(_send(port, "/v1/clusters"))  # waits 0.2 s behind the held request, then 503
        health = _answer(_send(port, "/healthz"))
        ready = _answer(_send(port, "/readyz"))
        holding.release()
        assert _answer(held)[0] == 200
        after = _answer(_send(port, "/v1/clusters"))
    status, headers, body = refused
    assert status == 503
    assert headers["retry-after"] == str(serving.RETRY_AFTER_S)
    assert headers["content-type"] == "application/problem+json"
    assert json.loads(body)["code"] == "server_busy"
    assert health[0] == 200 and json.loads(health[2]) == {"status": "ok"}
    assert ready[0] == 200
    assert after[0] == 401  # room again: the app answers (no key given)


def test_a_waiting_request_is_served_once_room_frees(holding: Holding, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELYRIX_API_QUEUE_WAIT_S", "60")
    with _served(holding) as port:
        held = _send(port, HOLD)
        assert holding.held.wait(30)
        waiting = _send(port, "/v1/clusters")
        assert _answer(_send(port, "/healthz"))[0] == 200  # served past the one waiting
        holding.release()
        assert _answer(held)[0] == 200
        status, _, body = _answer(waiting)
    assert status == 401 and json.loads(body)["code"] == "unauthenticated"


def test_the_listener_accepts_every_waiting_connection_in_one_turn_of_the_loop() -> None:
    """libuv alone accepts one connection per turn; 50 waiting connections are all accepted in 10 turns."""
    made: list[asyncio.BaseTransport] = []

    class Counted(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            made.append(transport)

    async def scenario() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Counted, "127.0.0.1", 0, backlog=128)
        assert isinstance(server, serving.Listener)
        port = server.sockets[0].getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]  # queued in the kernel
        turns = 0
        while len(made) < 50 and turns < 10:
            await asyncio.sleep(0)
            turns += 1
        accepted = len(made)
        for client in clients:
            client.close()
        for transport in made:
            transport.close()
        server.close()
        await server.wait_closed()
        return accepted, turns

    loop = serving.FairAcceptLoop()
    try:
        accepted, turns = loop.run_until_complete(scenario())
    finally:
        loop.close()
    assert accepted == 50, f"{accepted} of 50 connections accepted after {turns} turns of the loop"


def test_the_server_freezes_its_start_up_objects_before_it_serves(
    holding: Holding, monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen: list[int] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: frozen.append(gc.get_freeze_count()))
    gc.unfreeze()
    try:
        serving.serve(holding, "127.0.0.1", 0)
    finally:
        gc.unfreeze()
    assert frozen and frozen[0] > 10_000, frozen  # the app's modules, routes and schemas: ~270,000 objects


_WORKER = """import gc, json, sys, uvicorn
config = uvicorn.Config(sys.argv[1], **json.loads(sys.argv[2]))
config.load()  # what each worker process does before it serves (uvicorn.Server._serve)
print(gc.get_freeze_count())
"""


def test_each_worker_of_server_workers_freezes_its_start_up_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, velyrix: Callable[..., Any]
) -> None:
    """``velyrix server --workers 2`` hands uvicorn an app to load in each worker process; loaded as a worker
    loads it (a fresh interpreter: uvicorn spawns its workers), it leaves the start-up objects frozen, as the
    single-process server does."""
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("VELYRIX_DATABASE_URL", raising=False)
    runs: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: runs.append((app, options)))
    assert velyrix("server", "--workers", "2", "--port", "0").exit_code == 0
    [(app, options)] = runs
    assert options["workers"] == 2 and options["factory"] is True
    worker = subprocess.run(
        [sys.executable, "-c", _WORKER, app, json.dumps(options)], capture_output=True, text=True, timeout=600
    )
    assert worker.returncode == 0, worker.stderr[-2000:]
    assert int(worker.stdout.split()[-1]) > 10_000, worker.stdout
