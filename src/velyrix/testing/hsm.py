"""A tenant's HSM and key manager for tests: SoftHSM2 tokens (Debian ``softhsm2``) and a PyKMIP server on
loopback over mutual TLS, with a throwaway CA.

``SoftHsm`` writes a ``softhsm2.conf`` with a token directory in a temp folder, initialises the named tokens
with ``softhsm2-util`` and sets ``SOFTHSM2_CONF`` (read once, when a process loads the module). ``KmipServer``
starts ``python -m velyrix.testing.kmip_server`` (PyKMIP's server, its own SQLite store) on a free port with a
server certificate for 127.0.0.1 and issues client certificates (clientAuth; the key manager names their
owner by the certificate's CN). ``stop()`` ends what was started.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from velyrix import errors

SOFTHSM_MODULE = "/usr/lib/softhsm/libsofthsm2.so"
SO_PIN = "0000000"


@dataclass
class SoftHsm:
    """SoftHSM2 tokens in a temporary directory: ``tokens`` maps label -> user PIN."""

    tokens: dict[str, str]
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="velyrix-softhsm-")))
    module: str = SOFTHSM_MODULE

    def start(self) -> SoftHsm:
        tool = shutil.which("softhsm2-util")
        if tool is None or not Path(self.module).exists():
            raise errors.ExternalToolError("SoftHSM2 is not installed", hint="apt-get install softhsm2")
        (self.folder / "tokens").mkdir(exist_ok=True)
        conf = self.folder / "softhsm2.conf"
        conf.write_text(
            f"directories.tokendir = {self.folder / 'tokens'}\nobjectstore.backend = file\nlog.level = ERROR\n"
        )
        os.environ["SOFTHSM2_CONF"] = str(conf)
        for label, pin in self.tokens.items():
            subprocess.run(
                [tool, "--init-token", "--free", "--label", label, "--so-pin", SO_PIN, "--pin", pin],
                check=True,
                capture_output=True,
                timeout=60,
            )
        return self

    def stop(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


@dataclass(frozen=True)
class Identity:
    """A certificate and its key, PEM text."""

    cert_pem: str
    key_pem: str


class TestCa:
    """A throwaway CA (RSA 2048, valid a day) that issues server and client certificates."""

    __test__ = False  # not a test class

    def __init__(self) -> None:
        self._key = rsa.generate_private_key(65537, 2048)
        now = dt.datetime.now(dt.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name("Velyrix test key-manager CA"))
            .issuer_name(_name("Velyrix test key-manager CA"))
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM).decode()

    def issue(self, cn: str, *, server: bool = False) -> Identity:
        key = rsa.generate_private_key(65537, 2048)
        now = dt.datetime.now(dt.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if server:
            ip = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
            builder = builder.add_extension(x509.SubjectAlternativeName([ip]), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return Identity(cert.public_bytes(serialization.Encoding.PEM).decode(), _pem_key(key))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class KmipServer:
    """PyKMIP's KMIP server on ``127.0.0.1:port`` (TLS 1.2, client certificates required)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="velyrix-kmip-"))
        self.ca = TestCa()
        self.port = free_port()
        self.host = "127.0.0.1"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout_s: float = 60.0) -> KmipServer:
        server = self.ca.issue("kmip-server", server=True)
        (self.folder / "ca.pem").write_text(self.ca.pem)
        (self.folder / "server.pem").write_text(server.cert_pem)
        (self.folder / "server.key").write_text(server.key_pem)
        (self.folder / "policies").mkdir()
        log = open(self.folder / "server.out", "wb")
        self._proc = subprocess.Popen(
            [sys.executable, "-W", "ignore", "-m", "velyrix.testing.kmip_server", str(self.folder), str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise errors.ExternalToolError(f"the KMIP server exited: {(self.folder / 'server.out').read_text()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=1.0):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise errors.ExternalToolError(f"the KMIP server did not listen on {self.endpoint} in {timeout_s} s")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        shutil.rmtree(self.folder, ignore_errors=True)


TENANT_TOKEN = "tenant-hsm"
TENANT_PIN = "tenant-pin-4711"
REGION_TOKEN = "velyrix-region"
REGION_PIN = "region-pin-0815"
_SHARED: list[SoftHsm] = []


def shared_softhsm() -> SoftHsm:
    """The one SoftHSM2 of this process (a PKCS#11 module reads ``SOFTHSM2_CONF`` once, when loaded): a
    tenant's token ``TENANT_TOKEN`` and the region's ``REGION_TOKEN``; removed at exit."""
    if not _SHARED:
        import atexit

        hsm = SoftHsm({TENANT_TOKEN: TENANT_PIN, REGION_TOKEN: REGION_PIN}).start()
        atexit.register(hsm.stop)
        _SHARED.append(hsm)
    return _SHARED[0]
