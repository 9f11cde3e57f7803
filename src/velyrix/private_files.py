"""Files only their owner may read: Velyrix's home directory (0700), the SQLite database and its WAL
and shared-memory files, the twin's state and the CLI's credentials (0600), written atomically.

``write_private`` writes a temporary file beside the target, flushes it to disk and renames it over the
target, so a full disk or a crash leaves the previous file whole (never a truncated one).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path, *, tighten: bool = False) -> Path:
    """Create ``path`` (and parents) as 0700; ``tighten`` also sets 0700 on an existing ``path`` (for
    directories that are Velyrix's own, such as ``$VELYRIX_HOME``). Returns ``path``."""
    existed = path.exists()
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if tighten or not existed:
        path.chmod(DIR_MODE)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically, mode 0600. On any error (disk full...) the old file stays
    as it was and the error is raised."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):  # the rename itself reaches the disk
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def private_sqlite(database: Path) -> None:
    """Create the SQLite file ``database`` as 0600 before SQLite does (SQLite gives its WAL and
    shared-memory files the database file's mode) and tighten existing ones to 0600."""
    if not database.exists():
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    for suffix in ("", "-wal", "-shm", "-journal"):
        part = database.with_name(database.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            if part.stat().st_mode & 0o077:
                part.chmod(FILE_MODE)
