"""Real OpenSSH daemons for tests and demos: the jump host and one sshd per twin node, each on a
loopback port with its own configuration, host key and ``authorized_keys`` in a temp directory
(Debian's openssh-server; configuration from ``controlplane.access.jumphost``). ``stop()`` ends exactly
the process it started.

    with Sshd(tmp_path / "jump", authorized_keys=text) as jump:
        subprocess.run(["ssh", "-p", str(jump.port), ...])
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from velyrix import errors
from velyrix.controlplane.access import jumphost

SSHD = "/usr/sbin/sshd"


def missing_binaries() -> list[str]:
    """Which of sshd, ssh and ssh-keygen are not installed (empty: the tests can run)."""
    found = [] if os.access(SSHD, os.X_OK) else ["sshd"]
    return found + [name for name in ("ssh", "ssh-keygen") if shutil.which(name) is None]


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _end_with_parent() -> None:
    """In the child before ``exec``: Linux ends the daemon (SIGTERM) when the thread that started it ends,
    so a ``velyrix up`` stopped by a signal (uvicorn re-raises it, no ``finally`` runs) leaves no sshd."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1  # <linux/prctl.h>
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


class Sshd:
    """One ``sshd -D`` on 127.0.0.1 with ``authorized_keys`` for every user; its log (``-E``) is
    ``log_path``. ``start()`` returns once the port accepts connections."""

    def __init__(
        self, directory: Path, authorized_keys: str, port: int | None = None, extra: tuple[str, ...] = ()
    ) -> None:
        self.directory = directory
        self.port = port or free_port()
        self.authorized_keys = directory / "authorized_keys"
        self.host_key = directory / "host_ed25519"
        self.config = directory / "sshd_config"
        self.log_path = directory / "sshd.log"
        self._text = authorized_keys
        self.extra = extra
        self.process: subprocess.Popen[bytes] | None = None

    def host_public_key(self) -> str:
        return (self.directory / "host_ed25519.pub").read_text().strip()

    def start(self, timeout_s: float = 20.0) -> Sshd:
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self.host_key.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.host_key)], check=True)
        self.authorized_keys.write_text(self._text)
        self.authorized_keys.chmod(0o600)
        self.config.write_text(
            jumphost.sshd_config(
                port=self.port, host_key=self.host_key, authorized_keys=self.authorized_keys, extra=self.extra
            )
        )
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
        check = subprocess.run([SSHD, "-t", "-f", str(self.config)], capture_output=True, text=True)
        if check.returncode != 0:
            raise errors.ExternalToolError(f"sshd -t refused its configuration: {check.stderr.strip()}")
        self.process = subprocess.Popen(
            [SSHD, "-D", "-f", str(self.config), "-E", str(self.log_path)], preexec_fn=_end_with_parent
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise errors.ExternalToolError(f"sshd exited: {self.log_path.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise errors.ExternalToolError(f"sshd did not listen on 127.0.0.1:{self.port} within {timeout_s:g} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> Sshd:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
