"""Fixtures of the identity suite: a temporary VELYRIX_HOME and a real uvicorn server on loopback serving
the control plane on its SQLite database (optionally over TLS), checked afterwards for one audit event
per mutation."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.conftest import Recorder, assert_each_mutation_audited_once
from velyrix.testing import postgres


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    for name in ("VELYRIX_DATABASE_URL", "VELYRIX_ENDPOINT", "VELYRIX_API_KEY", "VELYRIX_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


class Served:
    """A control plane served by uvicorn in a thread; ``url`` is its base URL."""

    def __init__(self, app: Any, **config: Any) -> None:
        import uvicorn

        self.recorder = Recorder(app)
        self.port = postgres.free_port()
        scheme = "https" if config.get("ssl_certfile") else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(
            uvicorn.Config(self.recorder, host="127.0.0.1", port=self.port, log_level="warning", **config)
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.recorder.app.state.engine.dispose()

    @property
    def app(self) -> Any:
        return self.recorder.app


@pytest.fixture
def served(home: Path) -> Iterator[Served]:
    from velyrix.ops.service import create_app

    with Served(create_app()) as s:
        yield s
    # a SCIM POST .../.search is a query (RFC 7644 section 3.4.3), not a change: no audit event
    s.recorder.calls = [c for c in s.recorder.calls if not c[1].endswith("/.search")]
    assert_each_mutation_audited_once(s.recorder)
