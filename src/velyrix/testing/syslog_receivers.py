"""Real syslog receivers for the SIEM export's tests: rsyslog (Debian ``rsyslog`` + ``rsyslog-gnutls``)
and syslog-ng (Debian ``syslog-ng-core``, unpacked by ``scripts/syslog-ng.sh``), each listening on a
loopback port for RFC 5425 (syslog over TLS, octet counting) with a given certificate, writing every
message it receives, as received, one a line, to ``out.log`` in its own directory.

``Receiver.stop()`` is a graceful stop (SIGTERM; both daemons drain their queues to the file), ``start()``
starts it again on the same port with the same file (appending).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SYSLOG_NG_ROOT = Path("/opt/syslog-ng")  # where scripts/syslog-ng.sh unpacks it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rsyslog_available() -> str | None:
    """Why rsyslog with TLS cannot run here, or None."""
    if shutil.which("rsyslogd") is None:
        return "rsyslogd is not installed (Debian rsyslog)"
    if not any(Path(d, "lmnsd_gtls.so").exists() for d in ("/usr/lib/x86_64-linux-gnu/rsyslog", "/usr/lib/rsyslog")):
        return "rsyslog's TLS driver is not installed (Debian rsyslog-gnutls)"
    return None


def syslog_ng_available() -> str | None:
    """Why syslog-ng cannot run here, or None."""
    if not (SYSLOG_NG_ROOT / "usr/sbin/syslog-ng").exists():
        return f"syslog-ng is not unpacked in {SYSLOG_NG_ROOT} (run: bash scripts/syslog-ng.sh as root)"
    return None


_RSYSLOG_CONF = """
global(workDirectory="{dir}" defaultNetstreamDriver="gtls" defaultNetstreamDriverCAFile="{ca}"
       defaultNetstreamDriverCertFile="{cert}" defaultNetstreamDriverKeyFile="{key}" maxMessageSize="64k")
module(load="imtcp" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")
input(type="imtcp" address="127.0.0.1" port="{port}")
template(name="raw" type="string" string="%rawmsg%\\n")
action(type="omfile" file="{out}" template="raw")
"""

_SYSLOG_NG_CONF = """@version: 3.38
options {{ flush-lines(0); keep-hostname(yes); log-msg-size(65536); }};
source s_tls {{ syslog(ip("127.0.0.1") port({port}) transport("tls") flags(store-raw-message)
  tls(key-file("{key}") cert-file("{cert}") peer-verify(optional-untrusted))); }};
destination d_out {{ file("{out}" template("${{RAWMSG}}\\n") flush-lines(0)); }};
log {{ source(s_tls); destination(d_out); }};
"""


@dataclass
class Receiver:
    """One daemon (``kind``: ``rsyslog`` or ``syslog-ng``) in ``directory`` on ``port``."""

    kind: str
    directory: Path
    cert: Path
    key: Path
    ca: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def out(self) -> Path:
        return self.directory / "out.log"

    def _command(self) -> tuple[list[str], dict[str, str]]:
        conf = self.directory / f"{self.kind}.conf"
        fields = {"dir": self.directory, "ca": self.ca, "cert": self.cert, "key": self.key}
        if self.kind == "rsyslog":
            conf.write_text(_RSYSLOG_CONF.format(port=self.port, out=self.out, **fields))
            pid = self.directory / "rsyslogd.pid"
            return ["rsyslogd", "-n", "-f", str(conf), "-i", str(pid)], dict(os.environ)
        conf.write_text(_SYSLOG_NG_CONF.format(port=self.port, out=self.out, **fields))
        lib = SYSLOG_NG_ROOT / "usr/lib/syslog-ng"
        env = dict(os.environ, LD_LIBRARY_PATH=str(lib))
        binary = str(SYSLOG_NG_ROOT / "usr/sbin/syslog-ng")
        args = ["-F", "-f", str(conf), "--module-path", str(lib / "3.38"), "--no-caps"]
        args += [
            "-R",
            str(self.directory / "persist"),
            "-p",
            str(self.directory / "pid"),
            "-c",
            str(self.directory / "ctl"),
        ]
        return [binary, *args], env

    def start(self, timeout_s: float = 30.0) -> None:
        """Start the daemon and wait until its port accepts connections."""
        cmd, env = self._command()
        log = (self.directory / f"{self.kind}.stderr").open("ab")
        self.proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self.directory)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.kind} exited: {(self.directory / f'{self.kind}.stderr').read_text()[-2000:]}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.kind} did not listen on port {self.port} within {timeout_s} s")

    def stop(self, timeout_s: float = 30.0) -> None:
        """Graceful stop (SIGTERM), waiting for the process to exit."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def lines(self) -> list[str]:
        """The messages written so far, one per line (RFC 5424 text, without the length prefix)."""
        if not self.out.exists():
            return []
        return [line for line in self.out.read_text(encoding="utf-8").splitlines() if line.strip()]
