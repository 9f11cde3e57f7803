"""Local state is private and written atomically: $VELYRIX_HOME 0700; the SQLite database, its WAL and
shared memory, the twin's state and credentials.json 0600; a login on a full disk leaves the previous
credentials whole and says so (exit 2), and a damaged credentials file is a clear error, not a traceback."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from velyrix import errors, private_files
from velyrix.cli import client


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_home_database_wal_and_twin_state_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import orm

    from velyrix.controlplane import db
    from velyrix.controlplane.reconcile.runtime import FleetRuntime

    home = tmp_path / "home"
    monkeypatch.setenv("VELYRIX_HOME", str(home))
    old = os.umask(0o022)
    try:
        url = f"sqlite:///{home / 'velyrix.db'}"
        engine = db.make_engine(url)
        db.upgrade(url=url, engine=engine)
        with engine.begin() as conn:
            conn.execute(sa.text("SELECT 1"))
            files = {p.name: mode(p) for p in home.iterdir()}
        runtime = FleetRuntime.twin(
            orm.sessionmaker(engine), "us-east-1", node_counts={"hgx-h200-8g": 4}, state_file=home / "twin.json"
        )
        runtime.driver.calls = 1
        runtime.save_twin()
        engine.dispose()
    finally:
        os.umask(old)
    assert mode(home) == 0o700
    assert files["velyrix.db"] == 0o600 and files.get("velyrix.db-wal", 0o600) == 0o600, files
    assert files.get("velyrix.db-shm", 0o600) == 0o600, files
    assert mode(home / "twin.json") == 0o600


def test_an_existing_home_and_database_are_tightened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from velyrix.controlplane import db

    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    (home / "velyrix.db").touch()
    (home / "velyrix.db").chmod(0o644)
    monkeypatch.setenv("VELYRIX_HOME", str(home))
    db.make_engine(f"sqlite:///{home / 'velyrix.db'}").dispose()
    assert mode(home) == 0o700 and mode(home / "velyrix.db") == 0o600


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_login_on_a_full_disk_keeps_the_previous_credentials(full_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(full_disk))
    client.save_credentials("http://127.0.0.1:1", "vlx_old")
    before = (full_disk / "credentials.json").read_bytes()
    fd = os.open(full_disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    with pytest.raises(errors.VelyrixError, match="previous login is unchanged") as caught:
        client.save_credentials("http://127.0.0.1:2", "vlx_new" + "x" * 8192)
    assert caught.value.user_error
    assert (full_disk / "credentials.json").read_bytes() == before
    assert mode(full_disk / "credentials.json") == 0o600
    assert [p.name for p in full_disk.iterdir() if p.name.startswith(".")] == []  # no temporary left


def test_a_damaged_credentials_file_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    monkeypatch.delenv("VELYRIX_ENDPOINT", raising=False)
    monkeypatch.delenv("VELYRIX_API_KEY", raising=False)
    (tmp_path / "credentials.json").write_text("")
    with pytest.raises(errors.NotLoggedInError, match="unreadable or damaged"):
        client.Client.from_login()
    (tmp_path / "credentials.json").write_text(json.dumps(["x"]))
    with pytest.raises(errors.NotLoggedInError):
        client.Client.from_login()


def test_write_private_replaces_atomically(tmp_path: Path) -> None:
    target = tmp_path / "f"
    private_files.write_private(target, b"one")
    private_files.write_private(target, b"two")
    assert target.read_bytes() == b"two" and mode(target) == 0o600
