"""``velyrix server`` runs the API alone and says so when it starts (its clusters' ``Reconciling``
condition says it too: tests/controlplane/test_cli_service.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from velyrix.testing.postgres import free_port


def test_server_says_on_start_that_it_runs_no_reconcilers(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELYRIX_")} | {"VELYRIX_HOME": str(tmp_path)}
    log = tmp_path / "server.err"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "velyrix.cli.main", "server", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                assert proc.poll() is None, log.read_text()
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(20)
    text = " ".join(log.read_text().split())
    assert "runs no reconcilers" in text and "velyrix up" in text, text
