"""The running system end to end: ``velyrix server`` (uvicorn on loopback), ``velyrix login``, a
self-operated cluster, ``velyrix ssh certificate --root``, then real OpenSSH through the jump host to the
cluster's node; the session lands in the server's audit log with its duration."""

from __future__ import annotations

import getpass
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.access.conftest import wait_for_events
from tests.controlplane.conftest import cluster_body, enroll_fleet
from velyrix.controlplane.access import jump_targets, jumphost
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import User
from velyrix.testing import sshd

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(sshd.missing_binaries()), reason=f"needs OpenSSH: {sshd.missing_binaries()}"),
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    for name in ("VELYRIX_DATABASE_URL", "VELYRIX_ENDPOINT", "VELYRIX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


@pytest.fixture
def served(home: Path, velyrix: Callable[..., Any]) -> Iterator[tuple[str, Any]]:
    import uvicorn

    from velyrix.ops.service import create_app

    assert velyrix("db", "upgrade").exit_code == 0
    application = create_app()
    enroll_fleet(application.state.sessionmaker)
    port = sshd.free_port()
    server = uvicorn.Server(uvicorn.Config(application, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", application
    server.should_exit = True
    thread.join(timeout=10)
    application.state.engine.dispose()


def test_cli_certificate_reaches_the_node_through_the_jump_host(
    velyrix: Callable[..., Any], served: tuple[str, Any], tmp_path: Path
) -> None:
    endpoint, application = served
    secret = velyrix("admin", "create-tenant", "acme").stdout.strip().splitlines()[-1]
    assert velyrix("login", "--endpoint", endpoint, "--api-key", secret).exit_code == 0
    from velyrix.cli import client

    api = client.Client.from_login()
    cluster = api.post("/v1/clusters", cluster_body("train") | {"operating_mode": "self_operated"})
    managed = api.post("/v1/clusters", cluster_body("serve"))
    maker = application.state.sessionmaker
    with maker() as s:
        user = User(tenant_id=cluster["tenant_id"], user_name="alice@acme.example", role="owner")
        s.add(user)
        s.commit()
        user_id = user.id
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)

    refused = velyrix("ssh", "certificate", "serve", "--user", user_id, "--public-key", f"{key}.pub", "--root")
    assert refused.exit_code == 2 and "root refused" in refused.stderr, refused.stderr
    assert managed["spec"]["operating_mode"] == "managed"
    got = velyrix("ssh", "certificate", "train", "--user", user_id, "--public-key", f"{key}.pub", "--root")
    assert got.exit_code == 0, got.stderr
    assert Path(f"{key}-cert.pub").read_text().startswith("ssh-ed25519-cert-v01@openssh.com ")

    # the cluster's node, as the fleet records it, and its sshd on a loopback port
    with maker() as s:
        for name, owner in (("train-n0", cluster), ("serve-n0", managed)):
            s.add(
                models.Node(
                    name=name,
                    region="us-east-1",
                    node_type="hgx-h200-8g",
                    tenant_id=owner["tenant_id"],
                    cluster_id=owner["id"],
                    hardware={},
                    labels={},
                )
            )
        s.commit()
        url = application.state.engine.url.render_as_string(hide_password=False)
        jump_config = jump_targets.config(s, url, {"train-n0": ("127.0.0.1", sshd.free_port())})
    (target,) = jump_config.targets
    assert (target.tenant_id, target.cluster_id, target.operating_mode) == (
        cluster["tenant_id"],
        cluster["id"],
        "self_operated",
    )
    ca = jump_config.authorities[cluster["tenant_id"]]
    node = sshd.Sshd(
        tmp_path / "node",
        jumphost.node_authorized_keys(target, ca, None),
        port=target.port,
        extra=("SetEnv VELYRIX_NODE=train-n0",),
    ).start()
    config = tmp_path / "jump.json"
    jump_config.write(config)
    jump = sshd.Sshd(
        tmp_path / "jump", jumphost.jump_authorized_keys(jump_config.authorities, config, sys.executable)
    ).start()
    try:
        known = tmp_path / "known_hosts"
        known.write_text(f"[127.0.0.1]:{jump.port} {jump.host_public_key()}\ntrain-n0 {node.host_public_key()}\n")
        common = ["-F", "/dev/null", "-o", "BatchMode=yes", "-i", str(key), "-o", f"UserKnownHostsFile={known}"]
        proxy = " ".join(["ssh", *common, "-p", str(jump.port), f"{getpass.getuser()}@127.0.0.1", "node", "%n"])
        done = subprocess.run(
            ["ssh", *common, "-o", f"ProxyCommand={proxy}", f"{getpass.getuser()}@train-n0", "echo on $VELYRIX_NODE"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        jump.stop()
        node.stop()
    assert done.returncode == 0 and done.stdout.strip() == "on train-n0", done.stderr
    (closed,) = wait_for_events(maker, "access.session.close")
    with maker() as s:
        issued = s.scalars(
            sa.select(models.AuditEvent).where(models.AuditEvent.action == "access.certificate.issue")
        ).all()
    assert closed.detail["duration_s"] > 0 and user_id in closed.actor
    assert len(issued) == 1 and issued[0].detail["principals"][1] == "root"
