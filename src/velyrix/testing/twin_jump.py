"""``velyrix up --jump-port PORT``: the real OpenSSH jump host in front of the twin's nodes.

The twin's nodes have no SSH daemon of their own, so each node allocated to a cluster gets one here: a
real ``sshd`` on a loopback port (``testing.sshd.Sshd``) that trusts its tenant's CA as the node would
(``jumphost.node_authorized_keys``: ``vlx-user``, ``root`` on self-operated clusters only, the provider
CA for ``vlx-operator``) and sets ``VELYRIX_NODE`` to the node's name in its sessions. In front of them
runs the jump host (``jumphost.jump_authorized_keys`` with the forced command ``jump_proxy``), on
``127.0.0.1:PORT``. A thread re-reads the database every ``refresh_s`` wall seconds: a newly allocated
node gets its daemon, a released one loses it, and a tenant's CA made since (its first certificate)
is trusted from then on; sshd reads ``authorized_keys`` at each login, so nothing restarts. With
``--redfish-port`` (``bmc=True``) each node's BMC target (``bmc NAME``) is its own view of the twin's
Redfish service (``testing/twin_bmc_view.py``: that node's system only, logged in with its stored
credential).

``known_hosts`` (in ``directory``) holds the jump host's and every node's host key, for ``ssh -o
UserKnownHostsFile=...``. ``close()`` stops exactly the daemons this started.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors, private_files
from velyrix.controlplane import bmc_credentials
from velyrix.controlplane.access import jump_targets, jumphost
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import access as tables
from velyrix.testing import sshd, twin_bmc_view

log = logging.getLogger(__name__)

MAX_NODES = 64
"""Velyrix design value: at most this many node daemons on one twin (each is an sshd process); nodes
allocated beyond it are left out of the jump host's targets, with a warning."""


class TwinJumpHost:
    """The jump host and the twin nodes' daemons; ``start()`` returns once the jump host accepts
    connections, ``close()`` stops every daemon it started."""

    def __init__(
        self,
        sessionmaker: orm.sessionmaker[orm.Session],
        database_url: str,
        directory: Path,
        port: int,
        *,
        bmc: bool = False,
        refresh_s: float = 1.0,
    ) -> None:
        self.sessionmaker = sessionmaker
        self.database_url = database_url
        self.directory = private_files.private_dir(directory)
        self.port = port
        self.bmc = bmc
        self.refresh_s = refresh_s
        self.config_path = self.directory / "jump.json"
        self.known_hosts = self.directory / "known_hosts"
        self.nodes: dict[str, sshd.Sshd] = {}
        self.bmc_views: dict[str, twin_bmc_view.BmcView] = {}
        self.jump: sshd.Sshd | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> TwinJumpHost:
        if sshd.missing_binaries():
            raise errors.InvalidInputError(
                f"--jump-port needs OpenSSH: {', '.join(sshd.missing_binaries())} not installed",
                hint="apt-get install openssh-server openssh-client",
            )
        authorized = self.refresh()
        self.jump = sshd.Sshd(self.directory / "jump", authorized, port=self.port)
        self.jump.start()
        self._write_known_hosts()
        self._thread = threading.Thread(target=self._loop, name="velyrix-jump-refresh", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.refresh_s):
            try:
                authorized = self.refresh()
                if self.jump is not None:
                    private_files.write_private(self.jump.authorized_keys, authorized.encode())
                self._write_known_hosts()
            except Exception:  # the loop outlives one failed refresh (logged)
                log.exception("jump host refresh failed")

    def _allocated(self, session: orm.Session) -> list[str]:
        names = list(
            session.scalars(
                sa.select(models.Node.name).where(models.Node.cluster_id.is_not(None)).order_by(models.Node.name)
            )
        )
        if len(names) > MAX_NODES:
            log.warning("jump host: %d allocated nodes, serving the first %d", len(names), MAX_NODES)
        return names[:MAX_NODES]

    def refresh(self) -> str:
        """Bring the node daemons and ``jump.json`` in line with the database; returns the jump host's
        ``authorized_keys`` text."""
        with self._lock, self.sessionmaker() as s:
            names = self._allocated(s)
            addresses = {n: ("127.0.0.1", self.nodes[n].port if n in self.nodes else sshd.free_port()) for n in names}
            bmcs = {n: ("127.0.0.1", self._bmc_view(n).port) for n in names} if self.bmc else None
            config = jump_targets.config(s, self.database_url, addresses, bmcs)
            provider = s.scalar(
                sa.select(tables.SshAuthority.public_key).where(tables.SshAuthority.tenant_id.is_(None))
            )
        wanted = {t.name for t in config.targets}
        for name in [n for n in self.nodes if n not in wanted]:
            self.nodes.pop(name).stop()
        for name in [n for n in self.bmc_views if n not in wanted]:
            self.bmc_views.pop(name).close()
        for target in config.targets:
            ca = config.authorities.get(target.tenant_id)
            text = jumphost.node_authorized_keys(target, ca, provider) if ca else ""
            self._node(target.name, target.port, text)
        config.write(self.config_path)
        return jumphost.jump_authorized_keys(config.authorities, self.config_path)

    def _bmc_view(self, name: str) -> twin_bmc_view.BmcView:
        if name not in self.bmc_views:
            endpoint = bmc_credentials.endpoints(self.sessionmaker)
            self.bmc_views[name] = twin_bmc_view.BmcView(lambda: endpoint(name)).start()
        return self.bmc_views[name]

    def _node(self, name: str, port: int, authorized: str) -> None:
        daemon = self.nodes.get(name)
        if daemon is None:
            daemon = sshd.Sshd(
                self.directory / "nodes" / name, authorized, port=port, extra=(f"SetEnv VELYRIX_NODE={name}",)
            )
            self.nodes[name] = daemon.start()
        elif daemon.authorized_keys.read_text() != authorized:
            private_files.write_private(daemon.authorized_keys, authorized.encode())

    def _write_known_hosts(self) -> None:
        lines = [f"[127.0.0.1]:{self.port} {self.jump.host_public_key()}"] if self.jump else []
        lines += [f"{name} {daemon.host_public_key()}" for name, daemon in sorted(self.nodes.items())]
        private_files.write_private(self.known_hosts, ("\n".join(lines) + "\n").encode())

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self._lock:
            for daemon in self.nodes.values():
                daemon.stop()
            self.nodes.clear()
            for view in self.bmc_views.values():
                view.close()
            self.bmc_views.clear()
        if self.jump is not None:
            self.jump.stop()
