"""The rollout controller as a real process, SIGKILLed twice at random moments of a rollout over 128 nodes
(its database and the twin's state on disk) and started again: it completes, no node got the version
twice, no step is left half done and every drained node was returned."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.rollouts.conftest import EXAMPLE


def _steps(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute("select count(*) from rollout_steps").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_a_sigkilled_controller_process_resumes_without_double_installs(tmp_path: Path) -> None:
    spec = tmp_path / "rollout.tf"
    spec.write_text(EXAMPLE.read_text().replace("notice_hours = 72", "notice_hours = 120"))
    cmd = [sys.executable, "-m", "velyrix.testing.rollout_process", str(tmp_path), "3", str(spec)]
    db = tmp_path / "rollouts.db"
    rng = random.Random(18)
    for _ in range(2):
        before = _steps(db)
        target = before + rng.randint(40, 300)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 240
        while proc.poll() is None and _steps(db) < target and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        assert _steps(db) > before
    final = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr
    assert final.stdout.strip() == "completed"
    saved = json.loads((tmp_path / "twin.json").read_text())
    installs = [tuple(x) for x in saved["installs"]]
    assert len(installs) == len(set(installs)) == 128
    assert {n["firmware"]["driver"] for n in saved["sim"]["nodes"].values()} == {"580.95.05"}
    with sqlite3.connect(db) as conn:
        assert conn.execute("select count(*) from rollout_steps where status != 'done'").fetchone()[0] == 0
        drained = {r[0] for r in conn.execute("select key from rollout_steps where action = 'drain'")}
        returned = {r[0] for r in conn.execute("select key from rollout_steps where action = 'return'")}
        assert {k.replace("/drain/", "/return/") for k in drained} == returned
