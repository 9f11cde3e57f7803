"""A throw-away PostgreSQL server for tests: ``initdb`` in a temporary directory, a free loopback
port, stopped and deleted afterwards.

PostgreSQL refuses to run as root. When the tests run as root (CI containers), the harness runs
``initdb``/``pg_ctl`` as an unprivileged user through ``runuser``: the ``VELYRIX_PG_USER`` account if
set, else ``nobody``. The data directory is handed to that user; clients connect over TCP with trust
authentication as the database superuser ``velyrix``.

Usage::

    with PostgresServer.start() as pg:
        url = pg.create_database("test1")   # postgresql+psycopg://velyrix@127.0.0.1:PORT/test1
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from velyrix import errors, settings

BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin")


def find_bin_dir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (``VELYRIX_PG_BIN`` overrides), or None."""
    pg_bin = settings.load().postgres_harness.bin_dir
    candidates = [pg_bin] if pg_bin else list(BIN_DIRS)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    for d in candidates:
        if (Path(d) / "initdb").exists() and (Path(d) / "pg_ctl").exists():
            return Path(d)
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    """A running server; ``stop()`` (or leaving the ``with`` block) stops it and removes its files."""

    bin_dir: Path
    root: Path
    port: int
    run_as: str | None

    @classmethod
    def start(cls, bin_dir: Path | None = None) -> PostgresServer:
        """Initialise a cluster in a new temporary directory and start it on a free port (~2 s)."""
        bin_dir = bin_dir or find_bin_dir()
        if bin_dir is None:
            raise errors.ExternalToolError(
                "PostgreSQL server binaries not found", hint="apt-get install postgresql, or set VELYRIX_PG_BIN"
            )
        run_as = None
        root = Path(tempfile.mkdtemp(prefix="velyrix-pg-"))
        if os.geteuid() == 0:
            run_as = settings.load().postgres_harness.run_as
            pw = pwd.getpwnam(run_as)
            os.chown(root, pw.pw_uid, pw.pw_gid)
            root.chmod(0o700)
        server = cls(bin_dir=bin_dir, root=root, port=free_port(), run_as=run_as)
        try:
            server._run(
                "initdb",
                "-D",
                str(root / "data"),
                "-U",
                "velyrix",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C",
            )
            opts = (
                f"-c listen_addresses=127.0.0.1 -c port={server.port} -c unix_socket_directories={root} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
            )
            server._run(
                "pg_ctl", "-D", str(root / "data"), "-l", str(root / "log"), "-o", opts, "-w", "-t", "30", "start"
            )
        except BaseException:
            server.stop()
            raise
        return server

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bin_dir / tool), *args]
        if self.run_as:
            cmd = ["runuser", "-u", self.run_as, "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=self.root, timeout=60)
        if proc.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise errors.ExternalToolError(f"{tool} failed: {proc.stderr.strip() or proc.stdout.strip()} {log}")

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy URL of ``database`` on this server."""
        return f"postgresql+psycopg://velyrix@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create an empty database and return its URL."""
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=velyrix dbname=postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its directory."""
        if (self.root / "data" / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")
            except errors.ExternalToolError:
                time.sleep(0.5)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
