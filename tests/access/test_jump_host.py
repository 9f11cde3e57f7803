"""The jump host with real OpenSSH: certificates from per-tenant CAs reach their own tenant's nodes
only, a managed cluster refuses tenant root, and every session is an audit event with its duration."""

from __future__ import annotations

import getpass
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.access.conftest import World, wait_for_events
from velyrix import errors
from velyrix.controlplane import audit
from velyrix.controlplane.access import certificates, jumphost, ssh_ca
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models
from velyrix.testing import sshd

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(sshd.missing_binaries()), reason=f"needs OpenSSH: {sshd.missing_binaries()}"),
]
INFO = audit.RequestInfo(request_id="req-test", source_address="127.0.0.1", method="POST", path="/test")


def owner(tenant_id: str, user_id: str) -> Principal:
    return Principal(key_id="key_t", name="t", tenant_id=tenant_id, role="owner", scopes=frozenset(), user_id=user_id)


def user_key(tmp: Path, name: str) -> Path:
    path = tmp / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path


def certify(world: World, key: Path, tenant: object, user_id: str, *, root: bool) -> Path:
    with world.sessionmaker() as s:
        row = certificates.add_user_key(s, tenant.tenant_id, user_id, key.with_suffix(".pub").read_text())  # type: ignore[attr-defined]
        issued = certificates.issue(
            s,
            INFO,
            owner(tenant.tenant_id, user_id),
            cluster_id=tenant.cluster_id,  # type: ignore[attr-defined]
            user_id=user_id,
            fingerprint_=row.fingerprint,
            root=root,
        )
        s.commit()
    cert = Path(f"{key}-cert.pub")
    cert.write_text(issued.certificate + "\n")
    return cert


def authority(world: World, tenant_id: str) -> ssh_ca.CertificateAuthority:
    with world.sessionmaker() as s:
        ca = certificates.authority(s, tenant_id)
        s.commit()
    return ca


class Site:
    """The jump host and one sshd per twin node, all on loopback."""

    def __init__(self, world: World, tmp: Path, bmc_port: int | None = None) -> None:
        self.tmp, self.daemons, self.targets = tmp, [], []
        self.cas = {t.tenant_id: authority(world, t.tenant_id).public_key for t in (world.a, world.b)}
        for tenant, mode, node in ((world.a, "self_operated", "acme-n0"), (world.b, "managed", "globex-n0")):
            bmc = ("127.0.0.1", bmc_port) if bmc_port else (None, None)
            target = jumphost.NodeTarget(
                node, tenant.tenant_id, tenant.cluster_id, mode, "127.0.0.1", sshd.free_port(), *bmc
            )
            keys = jumphost.node_authorized_keys(target, self.cas[tenant.tenant_id], None)
            daemon = sshd.Sshd(tmp / node, keys, port=target.port, extra=(f"SetEnv VELYRIX_NODE={node}",))
            self.daemons.append(daemon.start())
            self.targets.append(target)
        config = tmp / "jump.json"
        jumphost.JumpConfig(world.url, tuple(self.targets), self.cas).write(config)
        self.jump = sshd.Sshd(tmp / "jump", jumphost.jump_authorized_keys(self.cas, config, sys.executable)).start()
        self.daemons.append(self.jump)
        known = [f"[127.0.0.1]:{self.jump.port} {self.jump.host_public_key()}"]
        known += [f"{t.name} {d.host_public_key()}" for t, d in zip(self.targets, self.daemons, strict=False)]
        self.known_hosts = tmp / "known_hosts"
        self.known_hosts.write_text("\n".join(known) + "\n")

    def ssh(
        self, key: Path, node: str, login: str, command: str, via: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        common = [
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-i",
            str(key),
            "-o",
            f"CertificateFile={key}-cert.pub",
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "StrictHostKeyChecking=yes",
        ]
        jump = ["ssh", *common, "-p", str(self.jump.port), f"{getpass.getuser()}@127.0.0.1", "node", via or node]
        proxy = " ".join(jump)
        return subprocess.run(
            ["ssh", *common, "-o", f"ProxyCommand={proxy}", f"{login}@{node}", command],
            capture_output=True,
            text=True,
            timeout=60,
        )

    def stop(self) -> None:
        for daemon in self.daemons:
            daemon.stop()


@pytest.fixture
def site(world: World, tmp_path: Path):  # type: ignore[no-untyped-def]
    made = Site(world, tmp_path)
    yield made
    made.stop()


def events(world: World, action: str) -> list[models.AuditEvent]:
    with world.sessionmaker() as s:
        return list(s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.action == action)))


def test_self_operated_owner_reaches_own_node_as_root_and_not_another_tenants(
    world: World, site: Site, tmp_path: Path
) -> None:
    key = user_key(tmp_path, "alice")
    certify(world, key, world.a, world.a.owner_id, root=True)
    login = getpass.getuser()
    done = site.ssh(key, "acme-n0", login, "echo reached $VELYRIX_NODE")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "reached acme-n0"
    # the same certificate, asking the jump host for the other tenant's node
    other = site.ssh(key, "globex-n0", login, "echo reached $VELYRIX_NODE")
    assert other.returncode != 0 and "reached" not in other.stdout
    assert "no node 'globex-n0' among this tenant's nodes" in other.stderr
    (opened,) = events(world, "access.session.open")
    (closed,) = wait_for_events(world.sessionmaker, "access.session.close")
    assert opened.target == closed.target == "node:acme-n0"
    assert opened.tenant_id == world.a.tenant_id and world.a.owner_id in opened.actor
    assert closed.detail["duration_s"] > 0 and closed.detail["bytes_from_node"] > 0
    assert "root" in closed.detail["principals"]
    (refused,) = events(world, "access.session.refuse")
    assert refused.outcome == "denied" and refused.target == "node globex-n0"


def test_the_other_tenants_node_trusts_only_its_own_ca(world: World, site: Site, tmp_path: Path) -> None:
    # even relayed straight to globex-n0's port, acme's certificate is not accepted there
    key = user_key(tmp_path, "alice")
    certify(world, key, world.a, world.a.member_id, root=False)
    acme = next(t for t in site.targets if t.name == "acme-n0")
    globex = next(t for t in site.targets if t.name == "globex-n0")
    object.__setattr__(acme, "port", globex.port)  # acme's target now points at globex's sshd
    config = tmp_path / "jump.json"
    jumphost.JumpConfig(world.url, tuple(site.targets), site.cas).write(config)
    done = site.ssh(key, "globex-n0", getpass.getuser(), "true", via="acme-n0")
    assert done.returncode != 0
    assert "Permission denied" in done.stderr


def test_managed_cluster_refuses_tenant_root(world: World, site: Site, tmp_path: Path) -> None:
    key = user_key(tmp_path, "bob")
    with pytest.raises(errors.AccessError) as refused:
        certify(world, key, world.b, world.b.owner_id, root=True)
    assert refused.value.code == "access_tenant_root_refused" and refused.value.http_status == 403
    (event,) = events(world, "access.certificate.refuse")
    assert event.detail["operating_mode"] == "managed"
    # a root certificate made by the tenant's CA behind the control plane's back: the node refuses it
    ca = authority(world, world.b.tenant_id)
    forged, _, _ = ssh_ca.sign_user(
        ca,
        key.with_suffix(".pub").read_text(),
        key_id="forged",
        principals=[ssh_ca.tenant_principal(world.b.tenant_id), ssh_ca.ROOT],
    )
    Path(f"{key}-cert.pub").write_text(forged + "\n")
    root = site.ssh(key, "globex-n0", getpass.getuser(), "echo reached")
    assert root.returncode != 0 and "Permission denied" in root.stderr
    # the unprivileged certificate the control plane does issue works
    certify(world, key, world.b, world.b.owner_id, root=False)
    user = site.ssh(key, "globex-n0", getpass.getuser(), "echo reached $VELYRIX_NODE")
    assert user.returncode == 0 and user.stdout.strip() == "reached globex-n0", user.stderr


def test_member_of_a_self_operated_tenant_gets_no_root(world: World, tmp_path: Path) -> None:
    key = user_key(tmp_path, "carol")
    with pytest.raises(errors.AccessError):
        certify(world, key, world.a, world.a.member_id, root=True)


class _Bmc(http.server.BaseHTTPRequestHandler):
    """A BMC's Redfish service root on loopback, standing in for the twin's Redfish service."""

    def do_GET(self) -> None:
        body = json.dumps({"@odata.id": "/redfish/v1", "RedfishVersion": "1.15.0", "Id": "RootService"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def bmc() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Bmc)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_bmc_through_the_jump_host_needs_a_root_certificate(world: World, tmp_path: Path, bmc: int) -> None:
    site = Site(world, tmp_path, bmc_port=bmc)
    try:
        key = user_key(tmp_path, "alice")
        login = f"{getpass.getuser()}@127.0.0.1"
        request = "GET /redfish/v1 HTTP/1.0\r\nHost: bmc\r\n\r\n"
        jump = [
            "ssh",
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-i",
            str(key),
            "-o",
            f"UserKnownHostsFile={site.known_hosts}",
            "-p",
            str(site.jump.port),
            login,
            "bmc",
            "acme-n0",
        ]
        certify(world, key, world.a, world.a.member_id, root=False)
        plain = subprocess.run(jump, input=request, capture_output=True, text=True, timeout=60)
        assert plain.returncode != 0 and "BMC access needs a root certificate" in plain.stderr
        certify(world, key, world.a, world.a.owner_id, root=True)
        done = subprocess.run(jump, input=request, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("HTTP/1.0 200") and '"RedfishVersion": "1.15.0"' in done.stdout
        (closed,) = wait_for_events(world.sessionmaker, "access.session.close")
        assert closed.target == "bmc:acme-n0" and closed.detail["bytes_to_node"] == len(request)
    finally:
        site.stop()


def test_a_node_that_does_not_answer_is_a_clear_refusal_and_still_audited(
    world: World, site: Site, tmp_path: Path
) -> None:
    key = user_key(tmp_path, "alice")
    certify(world, key, world.a, world.a.owner_id, root=True)
    site.daemons[0].stop()  # acme-n0's sshd
    done = site.ssh(key, "acme-n0", getpass.getuser(), "true")
    assert done.returncode != 0 and "node 'acme-n0' does not answer" in done.stderr, done.stderr
    (closed,) = wait_for_events(world.sessionmaker, "access.session.close")
    assert closed.detail["bytes_from_node"] == 0
