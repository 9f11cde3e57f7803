"""``velyrix plan`` printed as tables (its default output), written to a pipe as a user's ``| less`` or a CI log
gets it, pinned byte for byte against goldens recorded before the plain renderer (``cli/tables.py``) existed,
when rich laid every table out: at the width a pipe gets with no terminal anywhere (80), at a wide and at a
narrow ``COLUMNS`` (wrapped cells, ellipses); and on a terminal, where rich still prints them. Record with
``python -m tests.cli.test_plan_tables_golden`` only when a plan is meant to change, and say why in the
commit."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from bench import bench_plan

from ..conftest import EXAMPLES

GOLDEN = Path(__file__).resolve().parent / "golden" / "tables"
EXAMPLE_FILES = ("acme-405b.tf", "acme-connectivity.tf", "acme-pretrain.tf", "small-h100-k8s.tf")
WIDTHS = (None, 200, 60)
"""``COLUMNS`` of the runs; None: unset, with no terminal on any standard stream (rich's 80 columns)."""
CASES = [(example, (), width) for example in EXAMPLE_FILES for width in WIDTHS] + [
    ("acme-405b.tf", ("--simulate",), None),
    ("acme-405b.tf", ("--simulate",), 60),
]


def tables(path: Path, flags: tuple[str, ...], columns: int | None) -> str:
    """``velyrix plan [flags] path``'s stdout, in a process of its own whose standard streams are no terminal."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR")}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    with tempfile.TemporaryDirectory() as home:
        proc = subprocess.run(
            [sys.executable, "-m", "velyrix.cli.main", "plan", *flags, str(path)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            encoding="utf-8",
            env={**env, "VELYRIX_HOME": home},
        )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


TERMINAL = (("acme-405b.tf", 120), ("acme-connectivity.tf", 100))
"""Examples printed on a terminal (rich's tables with escape codes; the plain renderer is not used there)."""


def on_terminal(path: Path, columns: int) -> bytes:
    """What ``velyrix plan path`` writes to a terminal of ``columns`` (a pseudo-terminal, TERM=xterm-256color)."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "COLORTERM")}
    with tempfile.TemporaryDirectory() as home:
        proc = subprocess.Popen(
            [sys.executable, "-m", "velyrix.cli.main", "plan", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
            env={**env, "COLUMNS": str(columns), "TERM": "xterm-256color", "VELYRIX_HOME": home},
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(leader)
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    return b"".join(chunks)


@pytest.mark.parametrize(("example", "columns"), TERMINAL)
def test_the_tables_on_a_terminal_are_the_golden(example: str, columns: int) -> None:
    assert on_terminal(EXAMPLES / example, columns) == (GOLDEN / f"{example}.tty{columns}.bin").read_bytes()


def _name(example: str, flags: tuple[str, ...], columns: int | None) -> str:
    return f"{example}{''.join(flags)}.w{columns or 'default'}.txt"


@pytest.mark.parametrize(("example", "flags", "columns"), CASES)
def test_the_tables_of_each_example_are_the_golden(example: str, flags: tuple[str, ...], columns: int | None) -> None:
    golden = (GOLDEN / _name(example, flags, columns)).read_text(encoding="utf-8")
    assert tables(EXAMPLES / example, flags, columns) == golden


def _hundred_digests(tmp: Path) -> dict[str, str]:
    path = tmp / "hundred.tf"
    path.write_text(bench_plan.hundred_clusters(), encoding="utf-8")
    return {str(columns): hashlib.sha256(tables(path, (), columns).encode()).hexdigest() for columns in WIDTHS}


def test_the_tables_of_the_hundred_clusters_are_the_golden(tmp_path: Path) -> None:
    golden = json.loads((GOLDEN / "hundred.sha256.json").read_text())
    assert _hundred_digests(tmp_path) == golden


def _record() -> None:  # pragma: no cover - run by hand
    GOLDEN.mkdir(exist_ok=True)
    for example, flags, columns in CASES:
        text = tables(EXAMPLES / example, flags, columns)
        (GOLDEN / _name(example, flags, columns)).write_text(text, encoding="utf-8")
    for example, columns in TERMINAL:
        (GOLDEN / f"{example}.tty{columns}.bin").write_bytes(on_terminal(EXAMPLES / example, columns))
    with tempfile.TemporaryDirectory() as tmp:
        digests = _hundred_digests(Path(tmp))
    (GOLDEN / "hundred.sha256.json").write_text(json.dumps(digests, indent=1) + "\n")


if __name__ == "__main__":
    _record()
