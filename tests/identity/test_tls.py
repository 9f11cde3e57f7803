"""``velyrix server --tls-cert --tls-key`` (a real process): TLS 1.3 only by default (a TLS 1.2 client and
``openssl s_client -tls1_2`` are refused, ``-tls1_3`` connects), TLS 1.2 only with ``--tls-min-version
1.2``, HSTS on answers; ``velyrix login`` verifies the certificate (``--ca-bundle``), and the node agent
reports over TLS."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.identity.certs import Pki, make_pki
from velyrix.testing import postgres


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@contextmanager
def velyrix_server(home: Path, pki: Pki, *extra: str) -> Iterator[int]:
    """``velyrix server`` over TLS in its own process; yields its port once it accepts connections."""
    port = postgres.free_port()
    env = {**os.environ, "VELYRIX_HOME": str(home), "VELYRIX_SIGNING_KEY_DIR": str(home / "keys")}
    env.pop("VELYRIX_DATABASE_URL", None)
    cmd = [sys.executable, "-m", "velyrix.cli.main", "server", "--port", str(port)]
    log = home.parent / f"server-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--tls-cert", str(pki.cert), "--tls-key", str(pki.key), *extra], env=env, stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "velyrix server did not listen within 60 s"
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("velyrix server did not stop on SIGTERM within 20 s: " + log.read_text()) from None


def _handshake(port: int, pki: Pki, version: ssl.TLSVersion) -> str:
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.minimum_version = context.maximum_version = version
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return str(tls.version())


def _s_client(port: int, pki: Pki, flag: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", flag, "-CAfile", str(pki.ca), "-verify_return_error"],
        input="",
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_1_3_only_by_default_with_hsts(tmp_path: Path, pki: Pki) -> None:
    with velyrix_server(tmp_path / "home", pki) as port:
        assert _handshake(port, pki, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"
        with pytest.raises(ssl.SSLError):
            _handshake(port, pki, ssl.TLSVersion.TLSv1_2)
        refused = _s_client(port, pki, "-tls1_2")
        assert refused.returncode != 0, refused.stdout
        accepted = _s_client(port, pki, "-tls1_3")
        assert accepted.returncode == 0, accepted.stdout + accepted.stderr
        assert "TLSv1.3" in accepted.stdout and "Verify return code: 0 (ok)" in accepted.stdout
        resp = httpx.get(f"https://127.0.0.1:{port}/healthz", verify=ssl.create_default_context(cafile=str(pki.ca)))
        assert resp.status_code == 200
        assert resp.headers["strict-transport-security"].startswith("max-age=31536000")


def test_tls_1_2_only_when_asked_for(tmp_path: Path, pki: Pki) -> None:
    with velyrix_server(tmp_path / "home", pki, "--tls-min-version", "1.2") as port:
        assert _handshake(port, pki, ssl.TLSVersion.TLSv1_2) == "TLSv1.2"
        assert _handshake(port, pki, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"


def test_bad_tls_flags_exit_2_before_listening(velyrix: Callable[..., Any], home: Path, pki: Pki) -> None:
    alone = velyrix("server", "--tls-cert", str(pki.cert))
    assert alone.exit_code == 2 and "go together" in alone.stderr
    swapped = velyrix("server", "--tls-cert", str(pki.key), "--tls-key", str(pki.cert))
    assert swapped.exit_code == 2 and "cannot use" in swapped.stderr and "Traceback" not in swapped.stderr
    old = velyrix("server", "--tls-cert", str(pki.cert), "--tls-key", str(pki.key), "--tls-min-version", "1.0")
    assert old.exit_code == 2 and "1.2" in old.stderr


def test_login_verifies_the_certificate_and_the_agent_reports_over_tls(
    velyrix: Callable[..., Any], home: Path, pki: Pki
) -> None:
    owner = velyrix("admin", "create-tenant", "acme").stdout.strip().splitlines()[-1]
    provider = velyrix("admin", "create-provider-key", "noc").stdout.strip().splitlines()[-1]
    with velyrix_server(home, pki) as port:
        url = f"https://127.0.0.1:{port}"
        untrusted = velyrix("login", "--endpoint", url, "--api-key", owner)
        assert untrusted.exit_code == 2 and "not trusted" in untrusted.stderr and "--ca-bundle" in untrusted.stderr
        trusted = velyrix("login", "--endpoint", url, "--api-key", owner, "--ca-bundle", str(pki.ca))
        assert trusted.exit_code == 0, trusted.stderr
        listed = velyrix("keys", "list", "--json")  # later commands reuse the stored CA bundle
        assert listed.exit_code == 0 and "acme owner" in listed.stdout

        from velyrix.agent.collectors.base import NodeSample
        from velyrix.agent.reporting import Reporter

        verify = ssl.create_default_context(cafile=str(pki.ca))
        ops = {"Authorization": f"Bearer {provider}"}
        node = httpx.post(
            f"{url}/v1/nodes",
            json={"name": "gpu-0", "region": "us-east-1", "node_type": "hgx-h200-8g"},
            headers=ops,
            verify=verify,
        ).json()
        token = httpx.post(f"{url}/v1/nodes/{node['id']}/credentials", headers=ops, verify=verify).json()
        reporter = Reporter(url, token["node_token"], ca_bundle=str(pki.ca), attempts=1)
        try:
            reporter.report(NodeSample(hostname="gpu-0", node_type="hgx-h200-8g"))
        finally:
            reporter.client.close()
        last = httpx.get(f"{url}/v1/nodes/{node['id']}/report", headers=ops, verify=verify)
        assert last.status_code == 200, last.text
