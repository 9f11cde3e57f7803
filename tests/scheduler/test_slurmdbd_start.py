"""The Slurm accounting's start survives a slurmdbd that ends at once because its first connection to MariaDB
failed (seen on a loaded 2-core CI machine: "Unable to initialize accounting_storage/mysql"): it is started
again, and only a slurmdbd that keeps failing fails the start, with its last words. Real munged and MariaDB;
the slurmdbd is a stand-in that fails a given number of times, then listens on the configured DbdPort."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from velyrix import errors
from velyrix.ops.scheduler import local_slurm
from velyrix.testing import slurm

FAKE = """#!{python}
import os, pathlib, re, socket, sys, time
conf = pathlib.Path(os.environ["SLURM_CONF"]).with_name("slurmdbd.conf").read_text()
port = int(re.search(r"^DbdPort=(\\d+)", conf, re.M).group(1))
runs = pathlib.Path({runs!r})
n = int(runs.read_text()) if runs.exists() else 0
runs.write_text(str(n + 1))
if n < {failures}:
    print("slurmdbd: fatal: Unable to initialize accounting_storage/mysql accounting storage plugin", flush=True)
    sys.exit(1)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", port)); s.listen()
time.sleep(600)
"""


def _accounting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failures: int
) -> tuple[local_slurm.SlurmAccounting, Path]:
    missing = [b for b in slurm.missing_binaries() if b in ("munged", "mariadbd", "mariadb-install-db")]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (scripts/bootstrap.sh installs them)")
    runs = tmp_path / "runs"
    fake = tmp_path / "slurmdbd"
    fake.write_text(FAKE.format(python=sys.executable, runs=str(runs), failures=failures))
    fake.chmod(0o755)
    real = local_slurm._bin
    monkeypatch.setattr(local_slurm, "_bin", lambda name: str(fake) if name == "slurmdbd" else real(name))
    monkeypatch.setattr(local_slurm, "DBD_RETRY_S", 0.1)
    root = tmp_path / "acct"
    root.mkdir()
    os.chmod(tmp_path, 0o755)
    return local_slurm.SlurmAccounting(root), runs


def test_a_slurmdbd_that_fails_its_first_start_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    accounting, runs = _accounting(tmp_path, monkeypatch, failures=1)
    try:
        accounting.start()
        assert accounting.running() and runs.read_text() == "2"
    finally:
        accounting.stop()


def test_a_slurmdbd_that_keeps_failing_fails_the_start_with_its_last_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    accounting, runs = _accounting(tmp_path, monkeypatch, failures=99)
    with pytest.raises(errors.ExternalToolError, match="Unable to initialize accounting_storage/mysql"):
        accounting.start()
    assert runs.read_text() == str(local_slurm.DBD_ATTEMPTS) and not accounting.running()
