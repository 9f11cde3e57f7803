"""``velyrix server --fleet-driver``: mistakes are said clearly (exit 2, no traceback) before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _server(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VELYRIX_HOME": str(home)}
    env.pop("VELYRIX_DATABASE_URL", None)
    cmd = [sys.executable, "-m", "velyrix.cli.main", "server", "--port", "0", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def test_fleet_driver_mistakes_exit_2_with_a_hint(tmp_path: Path) -> None:
    no_token = _server(tmp_path, "--fleet-driver", "http://127.0.0.1:9", "--fleet-token-file", str(tmp_path / "t"))
    assert no_token.returncode == 2 and "does not exist" in no_token.stderr and "sim serve" in no_token.stderr
    workers = _server(tmp_path, "--fleet-driver", "http://127.0.0.1:9", "--workers", "2")
    assert workers.returncode == 2 and "one worker per replica" in workers.stderr
    (tmp_path / "t").write_text("x" * 40)
    down = _server(tmp_path, "--fleet-driver", "http://127.0.0.1:9", "--fleet-token-file", str(tmp_path / "t"))
    assert down.returncode != 0 and "did not answer" in down.stderr
    assert "Traceback" not in no_token.stderr + workers.stderr + down.stderr
