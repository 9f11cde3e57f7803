"""The jump host's and the nodes' OpenSSH configuration, rendered from who may reach what.

The jump host trusts each tenant's CA through its own ``authorized_keys`` line
(``cert-authority,principals="vlx-tenant-<id>"``), so a certificate opens only its own tenant's door,
and that door is a forced command (``jump_proxy``) that relays to the tenant's nodes only and records
every session as audit events. A node trusts its tenant's CA for the unprivileged login and, on a
self-operated cluster only, for ``root`` (``modes``); the provider's operators have their own CA.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from velyrix.controlplane.access import modes, ssh_ca


@dataclass(frozen=True)
class NodeTarget:
    """A node behind the jump host: where its sshd listens, whose it is and how it is operated."""

    name: str
    tenant_id: str
    cluster_id: str
    operating_mode: str
    host: str
    port: int
    bmc_host: str | None = None
    bmc_port: int | None = None
    """The node's BMC (Redfish over HTTP), reached with ``bmc <node>`` by root certificates."""


@dataclass(frozen=True)
class JumpConfig:
    """What ``jump_proxy`` reads (a 0600 JSON file): the node targets, the tenants' CA public keys
    and the database the audit events go to."""

    database_url: str
    targets: tuple[NodeTarget, ...]
    authorities: Mapping[str, str]
    """Tenant id -> CA public key line."""

    def write(self, path: Path) -> None:
        body: dict[str, object] = {"database_url": self.database_url, "targets": [asdict(t) for t in self.targets]}
        body["authorities"] = dict(self.authorities)
        path.touch(mode=0o600)
        path.write_text(json.dumps(body, indent=1))

    @classmethod
    def read(cls, path: Path) -> JumpConfig:
        body = json.loads(path.read_text())
        targets = tuple(NodeTarget(**t) for t in body["targets"])
        return cls(database_url=body["database_url"], targets=targets, authorities=body["authorities"])


def _quoted(text: str) -> str:
    """``text`` inside an authorized_keys option's double quotes (which cannot hold ``"``)."""
    if '"' in text or "\n" in text:
        raise ValueError(f"cannot quote {text!r} in authorized_keys")
    return text


def jump_authorized_keys(authorities: Mapping[str, str], config_path: Path, python: str = sys.executable) -> str:
    """The jump host's ``authorized_keys``: one line per tenant CA whose certificates run the session
    proxy for that tenant, with nothing else (``restrict``: no PTY, forwarding, agent or X11)."""
    lines = []
    for tenant_id, public_key in sorted(authorities.items()):
        argv = [python, "-m", "velyrix.controlplane.access.jump_proxy", "--config", str(config_path)]
        command = shlex.join([*argv, "--tenant", tenant_id])
        principal = ssh_ca.tenant_principal(tenant_id)
        lines.append(
            f'cert-authority,principals="{_quoted(principal)}",restrict,command="{_quoted(command)}" {public_key}'
        )
    return "\n".join(lines) + "\n"


def node_authorized_keys(target: NodeTarget, tenant_ca: str, provider_ca: str | None) -> str:
    """A node's ``authorized_keys``: its tenant's CA for ``vlx-user``, and for ``root`` only when the
    cluster is self-operated; the provider's CA for ``vlx-operator``."""
    logins = [ssh_ca.USER]
    if modes.rights(target.operating_mode).tenant_root_roles:
        logins.append(ssh_ca.ROOT)
    lines = [f'cert-authority,principals="{",".join(logins)}" {tenant_ca}']
    if provider_ca:
        lines.append(f'cert-authority,principals="{ssh_ca.OPERATOR}" {provider_ca}')
    return "\n".join(lines) + "\n"


def sshd_config(
    *,
    port: int,
    host_key: Path,
    authorized_keys: Path,
    log_level: str = "VERBOSE",
    extra: Iterable[str] = (),
) -> str:
    """An ``sshd_config`` for a loopback daemon: public-key (certificate) logins only, the given
    ``authorized_keys`` file for every user, the certificate's details exposed to forced commands
    (``ExposeAuthInfo``), no forwarding of any kind."""
    lines: Sequence[str] = (
        "ListenAddress 127.0.0.1",
        f"Port {port}",
        f"HostKey {host_key}",
        f"AuthorizedKeysFile {authorized_keys}",
        "PidFile none",
        "StrictModes no",
        "UsePAM no",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes",
        "PermitRootLogin prohibit-password",
        "ExposeAuthInfo yes",
        "AllowTcpForwarding no",
        "AllowAgentForwarding no",
        "AllowStreamLocalForwarding no",
        "X11Forwarding no",
        "PermitTunnel no",
        "PermitUserEnvironment no",
        "MaxAuthTries 3",
        "LoginGraceTime 20",
        f"LogLevel {log_level}",
        *extra,
    )
    return "\n".join(lines) + "\n"
