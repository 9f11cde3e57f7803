"""The npm ``oidc-provider`` (tests/identity/oidc, installed by scripts/bootstrap.sh with ``npm ci``) on a
free loopback port, with one confidential client and the accounts the tests log in as."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from velyrix.testing import postgres

FOLDER = Path(__file__).parent / "oidc"
CLIENT_ID = "velyrix"
CLIENT_SECRET = "velyrix-test-client-secret"


def skip_without_node() -> None:
    if shutil.which("node") is None or not (FOLDER / "node_modules" / "oidc-provider").is_dir():
        pytest.skip("needs node and tests/identity/oidc/node_modules (scripts/bootstrap.sh runs npm ci)")


@contextmanager
def oidc_provider(redirect_uris: list[str], accounts: dict[str, Any], log: Path) -> Iterator[str]:
    """Yield the issuer URL (``http://localhost:PORT``) of a running provider; stop it afterwards."""
    skip_without_node()
    port = postgres.free_port()
    config = {
        "clients": [
            {
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "redirect_uris": redirect_uris,
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "client_secret_basic",
            }
        ],
        "accounts": accounts,
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["node", "provider.mjs", str(port), json.dumps(config)], cwd=FOLDER, stdout=out, stderr=out
        )
    issuer = f"http://localhost:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(issuer + "/.well-known/openid-configuration", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "oidc-provider did not start: " + log.read_text()
            time.sleep(0.1)
        yield issuer
    finally:
        proc.terminate()
        proc.wait(timeout=10)
