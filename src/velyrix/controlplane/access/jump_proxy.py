"""The jump host's forced command: relay one session to a node of the certificate's own tenant and
record it (``access.session.open`` / ``access.session.close`` audit events: who, which node, when, how
long, bytes each way). Run by sshd for a certificate of the tenant given by ``--tenant`` (bound to that
tenant's CA in ``authorized_keys``: ``jumphost.jump_authorized_keys``).

The client asks for a node with the remote command ``node NAME`` (an SSH session to the node's sshd)
or ``bmc NAME`` (the node's BMC, root certificates of self-operated clusters only), e.g.
``ssh -o ProxyCommand='ssh -p JUMP_PORT user@jump node %n' root@NAME``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import socket
import sys
import threading
import time
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import ssh
from sqlalchemy import orm

from velyrix.controlplane import audit
from velyrix.controlplane.access import jumphost, modes, ssh_ca
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import engine, models

_CHUNK_BYTES = 65536


class Refused(Exception):
    """The session is refused; the message goes to the client's stderr."""


def certificate_of(auth_info: str) -> ssh.SSHCertificate:
    """The user certificate sshd accepted, from ``$SSH_USER_AUTH``'s ``publickey TYPE BASE64`` line."""
    for line in auth_info.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "publickey" and parts[1].endswith("-cert-v01@openssh.com"):
            return ssh.load_ssh_public_identity(f"{parts[1]} {parts[2]}".encode())  # type: ignore[return-value]
    raise Refused("the jump host takes certificates only")


def _check_certificate(cert: ssh.SSHCertificate, tenant_id: str, ca_line: str) -> None:
    """Belt and braces after sshd: signed by this tenant's CA and naming this tenant's principal."""
    ca = serialization.load_ssh_public_key(" ".join(ca_line.split()[:2]).encode())
    signer = cert.signature_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    if signer != ca.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH):
        raise Refused("certificate not signed by this tenant's CA")
    if ssh_ca.tenant_principal(tenant_id).encode() not in cert.valid_principals:
        raise Refused("certificate not issued for this tenant")


def choose(config: jumphost.JumpConfig, tenant_id: str, command: str, cert: ssh.SSHCertificate) -> tuple[str, str, int]:
    """``(kind, host, port)`` of the target ``command`` names (``node NAME`` or ``bmc NAME``); the same
    refusal for a node of another tenant as for one that does not exist."""
    parts = command.split()
    if len(parts) != 2 or parts[0] not in ("node", "bmc"):
        raise Refused("usage: node NAME | bmc NAME")
    kind, name = parts
    target = next((t for t in config.targets if t.name == name and t.tenant_id == tenant_id), None)
    if target is None:
        raise Refused(f"no node '{name}' among this tenant's nodes")
    if kind == "node":
        return kind, target.host, target.port
    if not modes.rights(target.operating_mode).tenant_root_roles or ssh_ca.ROOT.encode() not in cert.valid_principals:
        raise Refused("BMC access needs a root certificate of a self-operated cluster")
    if target.bmc_host is None or target.bmc_port is None:
        raise Refused(f"node '{name}' has no BMC behind this jump host")
    return kind, target.bmc_host, target.bmc_port


def _pump(read: object, write: object, counter: list[int]) -> None:
    """Copy bytes until EOF; ``read``/``write`` are callables; ``counter[0]`` counts bytes."""
    while True:
        try:
            data = read()  # type: ignore[operator]
        except OSError:
            data = b""
        if not data:
            return
        counter[0] += len(data)
        try:
            write(data)  # type: ignore[operator]
        except OSError:
            return


def relay(host: str, port: int) -> tuple[int, int]:
    """Relay stdin/stdout to ``host:port`` until either side closes; returns (bytes in, bytes out)."""
    conn = socket.create_connection((host, port), timeout=10)
    conn.settimeout(None)
    upstream, downstream = [0], [0]

    def to_node() -> None:
        _pump(lambda: os.read(0, _CHUNK_BYTES), conn.sendall, upstream)
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    thread = threading.Thread(target=to_node, daemon=True)
    thread.start()
    _pump(lambda: conn.recv(_CHUNK_BYTES), lambda b: os.write(1, b), downstream)
    conn.close()
    return upstream[0], downstream[0]


def _record(url: str, principal: Principal, info: audit.RequestInfo, **fields: object) -> None:
    with orm.Session(engine.make_engine(url)) as session:
        audit.record(session, info, principal, **fields)  # type: ignore[arg-type]
        session.commit()


def run(config_path: Path, tenant_id: str, env: dict[str, str]) -> int:
    """One session; returns the exit status (1: refused)."""
    config = jumphost.JumpConfig.read(config_path)
    session_id = models.new_id("jmp")
    source = env.get("SSH_CLIENT", "").split(" ")[0] or None
    command = env.get("SSH_ORIGINAL_COMMAND", "")
    cert = certificate_of(Path(env["SSH_USER_AUTH"]).read_text() if env.get("SSH_USER_AUTH") else "")
    key_id = cert.key_id.decode(errors="replace")
    principal = Principal(key_id=f"ssh:{cert.serial}", name=key_id, tenant_id=tenant_id, role="ssh", scopes=frozenset())
    info = audit.RequestInfo(request_id=session_id, source_address=source, method="SSH", path=f"jump {command}"[:200])
    who = {"certificate": key_id, "serial": cert.serial, "principals": [p.decode() for p in cert.valid_principals]}
    try:
        _check_certificate(cert, tenant_id, config.authorities[tenant_id])
        kind, host, port = choose(config, tenant_id, command, cert)
    except Refused as exc:
        _record(
            config.database_url,
            principal,
            info,
            action="access.session.refuse",
            target=command[:200],
            outcome="denied",
            status_code=403,
            error_code="access_target_refused",
            detail={**who, "why": str(exc)},
        )
        print(f"velyrix jump host: {exc}", file=sys.stderr)
        return 1
    target = command.split()[1]
    started = dt.datetime.now(dt.UTC)
    t0 = time.monotonic()
    _record(
        config.database_url,
        principal,
        info,
        action="access.session.open",
        target=f"{kind}:{target}",
        detail={**who, "session": session_id, "started_at": started.isoformat()},
    )
    bytes_in = bytes_out = 0
    try:
        bytes_in, bytes_out = relay(host, port)
    except OSError as exc:
        raise Refused(f"{kind} '{target}' does not answer ({exc.strerror or exc})") from None
    finally:
        duration_s = round(time.monotonic() - t0, 3)
        _record(
            config.database_url,
            principal,
            info,
            action="access.session.close",
            target=f"{kind}:{target}",
            detail={
                **who,
                "session": session_id,
                "started_at": started.isoformat(),
                "duration_s": duration_s,
                "bytes_to_node": bytes_in,
                "bytes_from_node": bytes_out,
            },
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="velyrix-jump-proxy")
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--tenant", required=True)
    args = parser.parse_args(argv)
    try:
        return run(args.config, args.tenant, dict(os.environ))
    except Refused as exc:
        print(f"velyrix jump host: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # no session without its audit event: refuse, in one line
        print(f"velyrix jump host: session refused, cannot record it ({type(exc).__name__})", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
