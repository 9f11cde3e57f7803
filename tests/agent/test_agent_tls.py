"""Agent reports over TLS: ``velyrix agent --control-plane https://... --ca-bundle`` (a real process) reports
to ``velyrix server --tls-cert/--tls-key`` (a real process); a certificate from another CA fails at once
with the fix named; plain HTTP to another host is refused before anything is sent."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.identity.certs import make_pki
from tests.identity.test_tls import velyrix_server
from velyrix import errors
from velyrix.agent.collectors.base import NodeSample
from velyrix.agent.reporting import Reporter

SIM_NODE = "use1-h200-su00-n00"  # the one node of ``velyrix agent --collector sim`` (SimRegion.build)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "home" / "keys"))
    for name in ("VELYRIX_DATABASE_URL", "VELYRIX_ENDPOINT", "VELYRIX_API_KEY", "VELYRIX_NODE_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def test_the_agent_process_reports_over_verified_tls(velyrix: Callable[..., Any], home: Path, tmp_path: Path) -> None:
    pki, other = make_pki(tmp_path / "pki"), make_pki(tmp_path / "other")
    operator = velyrix("admin", "create-provider-key", "noc").stdout.strip().splitlines()[-1]
    with velyrix_server(home, pki) as port:
        url = f"https://127.0.0.1:{port}"
        with httpx.Client(
            base_url=url,
            verify=ssl.create_default_context(cafile=str(pki.ca)),
            headers={"Authorization": f"Bearer {operator}"},
        ) as ops:
            body = {"name": SIM_NODE, "region": "us-east-1", "node_type": "hgx-h200-8g"}
            node = ops.post("/v1/nodes", json=body).json()
            token = ops.post(f"/v1/nodes/{node['id']}/credentials").json()["node_token"]

            wrong = Reporter(url, token, ca_bundle=str(other.ca))
            with pytest.raises(errors.AgentReportError, match="not trusted") as refused:
                wrong.report(NodeSample(hostname=SIM_NODE, node_type="hgx-h200-8g"))
            assert "--ca-bundle" in (refused.value.hint or "")
            wrong.close()
            assert ops.get(f"/v1/nodes/{node['id']}/report").status_code == 404  # nothing got through

            cmd = [sys.executable, "-m", "velyrix.cli.main", "agent", "--collector", "sim", "--prober", "none"]
            cmd += ["--listen", "127.0.0.1", "--port", "0", "--report-interval", "0.5", "--control-plane", url]
            cmd += ["--node-token", token, "--ca-bundle", str(pki.ca)]
            log = tmp_path / "agent.log"
            with log.open("wb") as out:
                agent = subprocess.Popen(cmd, env=dict(os.environ), stdout=out, stderr=out)
            try:
                deadline = time.monotonic() + 90
                while (last := ops.get(f"/v1/nodes/{node['id']}/report")).status_code != 200:
                    assert agent.poll() is None, log.read_text()
                    assert time.monotonic() < deadline, "no report within 90 s: " + log.read_text()
                    time.sleep(0.3)
            finally:
                agent.terminate()
                agent.wait(timeout=20)
            assert last.json()["hostname"] == SIM_NODE


def test_plain_http_to_another_host_is_refused() -> None:
    with pytest.raises(errors.InvalidInputError, match="unencrypted"):
        Reporter("http://10.0.0.5:8600", "vlxn_token")
    Reporter("http://10.0.0.5:8600", "vlxn_token", allow_plaintext=True).close()
    Reporter("http://127.0.0.1:8600", "vlxn_token").close()  # loopback: velyrix up, tests
    Reporter("http://localhost:8600", "vlxn_token").close()
