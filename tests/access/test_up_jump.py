"""``velyrix up --jump-port``: the running system starts the real sshd jump host in front of the twin's
nodes. A tenant logs in, declares a self-operated cluster, the twin provisions it, ``velyrix ssh
certificate --root`` signs the user's key, and real OpenSSH reaches the cluster's node through the jump
host (and with ``--redfish-port``, the node's BMC: its own system of the twin's Redfish service, no
other); another tenant's node is refused; the session is in the audit log with its duration.
``velyrix up`` is stopped at the end, and its daemons with it."""

from __future__ import annotations

import getpass
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.access.conftest import wait_for_events
from tests.controlplane.conftest import cluster_body
from velyrix.controlplane.db import engine
from velyrix.controlplane.db.models.identity import User
from velyrix.testing import sshd

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(sshd.missing_binaries()), reason=f"needs OpenSSH: {sshd.missing_binaries()}"),
]
BIN = Path(sys.executable).parent


def _poll(what: str, fn: Callable[[], Any], timeout_s: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = fn()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


@pytest.fixture
def up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, int, Path]]:
    home = tmp_path / "home"
    monkeypatch.setenv("VELYRIX_HOME", str(home))
    for name in ("VELYRIX_DATABASE_URL", "VELYRIX_ENDPOINT", "VELYRIX_API_KEY", "VELYRIX_SIGNING_KEY_DIR"):
        monkeypatch.delenv(name, raising=False)
    api, jump, redfish = sshd.free_port(), sshd.free_port(), sshd.free_port()
    argv = [str(BIN / "velyrix"), "up", "--port", str(api), "--jump-port", str(jump), "--redfish-port", str(redfish)]
    argv += ["--no-delays", "--agent-interval", "0", "--exporter-port", "0", "--nodes", "hgx-h200-8g=2"]
    log_path = tmp_path / "up.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(argv, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{api}"

    def ready() -> bool:
        assert proc.poll() is None, log_path.read_text()[-3000:]
        try:
            httpx.get(endpoint + "/healthz", timeout=1)
        except httpx.HTTPError:
            return False
        return "jump host on 127.0.0.1" in log_path.read_text()

    try:
        _poll("velyrix up", ready)
        yield endpoint, jump, home
    finally:
        proc.terminate()
        assert proc.wait(60) is not None

    def jump_gone() -> bool:  # the daemons end with velyrix up (testing/sshd.py _end_with_parent)
        try:
            socket.create_connection(("127.0.0.1", jump), timeout=1).close()
        except OSError:
            return True
        return False

    _poll("the jump host to stop with velyrix up", jump_gone, timeout_s=30)
    assert "Traceback" not in log_path.read_text(), log_path.read_text()[-3000:]


def test_velyrix_up_jump_host_reaches_the_tenants_twin_node(
    up: tuple[str, int, Path], velyrix: Callable[..., Any], tmp_path: Path
) -> None:
    endpoint, jump_port, home = up
    secret = velyrix("admin", "create-tenant", "acme").stdout.strip().splitlines()[-1]
    assert velyrix("login", "--endpoint", endpoint, "--api-key", secret).exit_code == 0
    from velyrix.cli import client

    api = client.Client.from_login()
    _poll(  # the twin's intake must have made a node available first (one of the two is held as a spare)
        "an available node",
        lambda: [c for c in api.get("/v1/regions/us-east-1")["capacity"] if c["available_nodes"] >= 1],
    )
    cluster = api.post("/v1/clusters", cluster_body("train") | {"operating_mode": "self_operated"})
    (node,) = _poll("the cluster's node", lambda: api.get("/v1/nodes", cluster_id=cluster["id"])["items"])
    eng = engine.make_engine(f"sqlite:///{home / 'velyrix.db'}")
    with eng.begin() as conn:
        user_id = "usr_alice0000000000000000000"
        conn.execute(
            User.__table__.insert().values(  # type: ignore[attr-defined]
                id=user_id, tenant_id=cluster["tenant_id"], user_name="alice@acme.example", role="owner", active=True
            )
        )
    eng.dispose()
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    got = velyrix("ssh", "certificate", "train", "--user", user_id, "--public-key", f"{key}.pub", "--root")
    assert got.exit_code == 0, got.stderr

    known = home / "jump" / "known_hosts"
    common = ["-F", "/dev/null", "-o", "BatchMode=yes", "-i", str(key), "-o", f"UserKnownHostsFile={known}"]
    jump = ["ssh", *common, "-p", str(jump_port), f"{getpass.getuser()}@127.0.0.1"]

    def through(target: str, command: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        proxy = " ".join([*jump, "node", "%n"])
        argv = ["ssh", *common, "-o", f"ProxyCommand={proxy}", f"root@{target}", command]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, input=stdin)

    # the jump host picks the node and the tenant's CA up within a refresh: poll until the node answers
    done = _poll(
        "the node through the jump host",
        lambda: (r := through(node["name"], "echo on $VELYRIX_NODE")).returncode == 0 and r,
    )
    assert done.stdout.strip() == f"on {node['name']}", done.stderr
    (closed,) = wait_for_events(_maker(home), "access.session.close")
    assert closed.detail["duration_s"] > 0 and user_id in closed.actor and closed.target == f"node:{node['name']}"

    # a node that is not this tenant's (a free twin node) is refused by the jump host
    free = next(n["name"] for n in _all_nodes(home) if n["name"] != node["name"])
    refused = subprocess.run([*jump, "node", free], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "no node" in refused.stderr, refused.stderr

    # the node's BMC through the jump host: the twin's Redfish service, that node's system only
    def bmc(path: str) -> tuple[str, str]:
        request = f"GET {path} HTTP/1.1\r\nHost: bmc\r\nConnection: close\r\n\r\n"
        got = subprocess.run([*jump, "bmc", node["name"]], capture_output=True, text=True, timeout=60, input=request)
        assert got.returncode == 0 and got.stdout.startswith("HTTP/1."), got.stderr
        head, _, body = got.stdout.partition("\n\n")  # text mode: the CRLFs read as newlines
        return head.splitlines()[0], body

    status, body = bmc(f"/redfish/v1/Systems/{node['name']}")
    assert " 200 " in status and body.startswith("{"), (status, body)
    assert json.loads(body)["Id"] == node["name"]
    for elsewhere in (f"/redfish/v1/Systems/{free}", "/redfish/v1/Systems", "/redfish/v1/AccountService"):
        assert " 403 " in bmc(elsewhere)[0], elsewhere


def _maker(home: Path) -> Any:
    from sqlalchemy import orm

    return orm.sessionmaker(engine.make_engine(f"sqlite:///{home / 'velyrix.db'}"))


def _all_nodes(home: Path) -> list[dict[str, Any]]:
    import sqlalchemy as sa

    eng = engine.make_engine(f"sqlite:///{home / 'velyrix.db'}")
    with eng.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(sa.text("SELECT name FROM nodes ORDER BY name"))]
    eng.dispose()
    return rows
