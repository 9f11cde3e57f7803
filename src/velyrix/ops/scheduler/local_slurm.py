"""A real Slurm on this host, on loopback: the daemons the twin's delivered clusters and the tests run.

- ``daemons.Daemons``: the processes started here, by name (``stop`` ends exactly those).
- ``SlurmAccounting``: munge, MariaDB (a temp datadir on a loopback port) and one slurmdbd, shared by every
  cluster that points its ``AccountingStorage*`` at it (``velyrix.ops.scheduler.twin_delivery``).
- ``SlurmCluster``: one cluster's slurmctld and one slurmd per node (``slurmd -N <node>``, its own loopback
  port, GPU device files under ``dev/<node>/``; in its own UTS namespace where this host allows it, so a
  job's ``hostname`` prints the node's name), with the configuration ``slurm_config.render`` generates.
  ``set_nodes`` follows a changed node list: nodes leaving are drained (a health drain keeps its reason)
  and their jobs requeued, slurm.conf rewritten, slurmctld's accounting queue flushed and slurmctld
  restarted (Slurm 22.05 reads node definitions only at start), slurmd started for new nodes and stopped
  for removed ones, then ``scontrol reconfigure`` for the nodes it keeps.

Uses Debian's packages (slurm-wlm, slurmdbd, munge, mariadb-server).
"""

from __future__ import annotations

import dataclasses
import functools
import getpass
import os
import random
import shutil
import socket
import subprocess
import time
from pathlib import Path

from velyrix import errors
from velyrix.ops.scheduler import clusters, commands, daemons, slurm_config

DAEMONS = ("munged", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld", "slurmd", "sacctmgr", "sbatch")


def missing_binaries() -> list[str]:
    """Which of the daemons and tools a local Slurm needs are not installed (empty: it can run)."""
    return [n for n in DAEMONS if not (shutil.which(n) or os.path.exists(f"/usr/sbin/{n}"))]


def _bin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _below_ephemeral() -> int:
    """First port of the kernel's ephemeral range (``ip_local_port_range``): ports drawn below it are not taken
    by an outgoing connection between the check and the daemon's bind."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(count: int, consecutive: bool = False, avoid: set[int] | None = None) -> list[int]:
    """``count`` free loopback TCP ports (consecutive when asked), none of them in ``avoid``, drawn below the
    ephemeral range."""
    taken = set(avoid or ())
    top = max(_below_ephemeral(), 10000 + count + 1)

    def free(port: int) -> bool:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
            return port not in taken

    for _ in range(200):
        if consecutive:
            base = random.randint(10000, top - count)
            if all(free(base + i) for i in range(count)):
                return list(range(base, base + count))
            continue
        ports = random.sample(range(10000, top), count)
        if all(free(p) for p in ports):
            return ports
    raise errors.ExternalToolError(f"no {count} free loopback ports below {top}")


def connectable(port: int) -> bool:
    """Whether something listens on loopback ``port``."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@functools.cache
def uts_namespaces() -> bool:
    """Whether this host lets us give each slurmd its own hostname (``unshare --uts``, needs root)."""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--uts", "true"], capture_output=True, timeout=10, check=False)
    return probe.returncode == 0


DBD_ATTEMPTS = 3
"""How many times ``SlurmAccounting`` starts slurmdbd before it gives up."""
DBD_RETRY_S = 1.0
"""Seconds between those starts."""


class SlurmAccounting:
    """munge + MariaDB + slurmdbd under ``root`` (``etc/slurmdbd.conf``, ``munge/munge.sock``); a database an
    earlier start left under ``root`` is started again, with its accounting records."""

    def __init__(self, root: Path, user: str | None = None, *, host: str | None = None) -> None:
        self.root = root
        self.user = user or getpass.getuser()
        self.host = host or socket.gethostname().split(".")[0]
        self.munge_socket = str(root / "munge" / "munge.sock")
        self.dbd_port, self.db_port = free_ports(2)
        self.conf_dir = root / "etc"
        self.daemons = daemons.Daemons(root / "log", self._environ)

    def _environ(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf_dir / "slurm.conf")}  # slurmdbd.conf sits beside it

    def options(self) -> slurm_config.SlurmOptions:
        """The dbd and storage settings every cluster on this accounting shares."""
        return slurm_config.SlurmOptions.twin(
            self.root,
            controller_host=self.host,
            slurmctld_port=0,
            slurmd_port=0,
            dbd_port=self.dbd_port,
            storage_port=self.db_port,
            slurm_user=self.user,
            auth_socket=self.munge_socket,
            health_check_command="",
        )

    def running(self) -> bool:
        return all(self.daemons.running(n) for n in ("munged", "mariadbd", "slurmdbd"))

    def start(self) -> None:
        """Start munged, mariadbd and slurmdbd and wait for each (blocking)."""
        for d in ("log", "run", "state"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        files = {"slurmdbd.conf": slurm_config.slurmdbd_conf(self.options())}
        slurm_config.write(files, self.conf_dir, slurm_user=self.user)
        try:
            self._start_munge()
            self._start_mariadb()
            self._start_slurmdbd()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        self.daemons.stop()

    def _start_slurmdbd(self) -> None:
        """slurmdbd, started again (at most ``DBD_ATTEMPTS`` times) when it alone exits before it listens: on a
        loaded machine its first connection to a MariaDB that just came up can fail, and slurmdbd then ends
        with "Unable to initialize accounting_storage/mysql" instead of retrying."""
        for attempt in range(1, DBD_ATTEMPTS + 1):
            self.daemons.spawn("slurmdbd", [_bin("slurmdbd"), "-D"])
            try:
                self.daemons.wait(lambda: connectable(self.dbd_port), "slurmdbd")
                return
            except errors.ExternalToolError:
                if attempt == DBD_ATTEMPTS or self.daemons.running("slurmdbd") or not self.running_but("slurmdbd"):
                    raise
            self.daemons.stop(["slurmdbd"])
            time.sleep(DBD_RETRY_S)

    def running_but(self, name: str) -> bool:
        """Whether every daemon started so far but ``name`` is still running."""
        return all(self.daemons.running(n) for n in self.daemons.procs if n != name)

    def _start_munge(self) -> None:
        d = self.root / "munge"
        d.mkdir(mode=0o711, exist_ok=True)
        d.chmod(0o711)
        (d / "munge.sock").unlink(missing_ok=True)  # left by an earlier start on this root: wait for the new one
        key = d / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        argv = [_bin("munged"), "-F", "--force", f"--socket={d / 'munge.sock'}", f"--key-file={key}"]
        argv += [f"--pid-file={d / 'munged.pid'}", f"--log-file={d / 'munged.log'}", f"--seed-file={d / 'munged.seed'}"]
        self.daemons.spawn("munged", argv)
        self.daemons.wait(lambda: (d / "munge.sock").exists(), "munged")

    def _start_mariadb(self) -> None:
        data = self.root / "mysql"
        if (data / "mysql").is_dir():  # an earlier start's database: its accounting records are kept
            self._start_mariadbd(data)
            return
        with open(self.root / "log" / "mariadb-install.log", "wb") as fh:
            subprocess.run(
                [
                    _bin("mariadb-install-db"),
                    "--no-defaults",
                    f"--datadir={data}",
                    f"--user={self.user}",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                ],
                stdout=fh,
                stderr=subprocess.STDOUT,
                check=True,
                timeout=180,
            )
        self._start_mariadbd(data)

    def _start_mariadbd(self, data: Path) -> None:
        # Grant tables are skipped: the server listens on loopback only and lives as long as its owner.
        argv = [_bin("mariadbd"), "--no-defaults", f"--datadir={data}", f"--user={self.user}"]
        argv += ["--bind-address=127.0.0.1", f"--port={self.db_port}", f"--socket={self.root / 'mysql.sock'}"]
        argv += [f"--pid-file={self.root / 'mysql.pid'}", f"--log-error={self.root / 'log' / 'mariadb.log'}"]
        argv += ["--skip-grant-tables", "--innodb-buffer-pool-size=64M", "--innodb-lock-wait-timeout=900"]
        argv += ["--innodb-flush-log-at-trx-commit=0", "--skip-log-bin"]
        self.daemons.spawn("mariadbd", argv)
        sock = self.root / "mysql.sock"  # ours: a port another process took would answer too, the socket not
        self.daemons.wait(lambda: sock.exists() and connectable(self.db_port), "mariadbd")


class SlurmCluster:
    """One cluster's slurmctld and slurmds under ``root`` on ``accounting`` (see the module doc).

    ``job_map_root``: where the prolog writes each node's GPU-to-job map (``<job_map_root>/<node>/``;
    default ``<root>/jobmap``). ``health_check_command``: what prolog and epilog run (default: the node is
    unhealthy while ``<root>/unhealthy/<node>`` exists)."""

    def __init__(
        self,
        root: Path,  # short: slurmstepd's Unix sockets live under <root>/spool/<node>/ (108 bytes at most)
        cluster: clusters.SchedulerCluster,
        accounting: SlurmAccounting,
        *,
        job_map_root: Path | None = None,
        health_check_command: str | None = None,
        uts: bool = True,
    ) -> None:
        self.root = root
        self.cluster = cluster
        self.accounting = accounting
        self.job_map_root = job_map_root or root / "jobmap"
        self.uts = uts and uts_namespaces()
        if health_check_command is None:
            health_check_command = f'test ! -e "{root}/unhealthy/$SLURMD_NODENAME" || exit 1'
        (self.ctl_port,) = free_ports(1, avoid={accounting.dbd_port, accounting.db_port})
        ports = free_ports(len(cluster.node_names), consecutive=True, avoid={self.ctl_port})
        self.ports = dict(zip(cluster.node_names, ports, strict=True))
        base = accounting.options()
        twin = slurm_config.SlurmOptions.twin(
            root,
            controller_host=accounting.host,
            slurmctld_port=self.ctl_port,
            slurmd_port=ports[0],
            dbd_port=accounting.dbd_port,
            storage_port=accounting.db_port,
            slurm_user=accounting.user,
            auth_socket=accounting.munge_socket,
            health_check_command=health_check_command,
        )
        self.options = dataclasses.replace(
            twin, job_map_dir=f"{self.job_map_root}/${{SLURMD_NODENAME}}", storage_user=base.storage_user
        )
        self.conf_dir = Path(self.options.conf_dir)
        self.slurm = commands.Slurm(conf=str(self.conf_dir / "slurm.conf"), timeout_s=30)
        self.daemons = daemons.Daemons(root / "log", self.slurm.environ)

    @property
    def conf(self) -> str:
        """Path of this cluster's slurm.conf (what ``SLURM_CONF`` must say)."""
        return str(self.conf_dir / "slurm.conf")

    def start(self, *, controller_only: bool = False) -> None:
        """Write the configuration, start slurmctld, then one slurmd per node; wait until every node is idle."""
        try:
            self._write()
            self._start_controller()
            if controller_only:
                return
            for name in self.cluster.node_names:
                self._start_node(name)
            self.daemons.wait(self.nodes_idle, "slurmd (all nodes idle)")
        except BaseException:
            self.stop()
            raise

    def set_nodes(self, cluster: clusters.SchedulerCluster) -> None:
        """Follow a changed node list (see the module doc); returns once every node of ``cluster`` is up."""
        old, new = set(self.cluster.node_names), set(cluster.node_names)
        added = [n for n in cluster.node_names if n not in old]
        gone = sorted(old - new)
        for name, port in zip(added, free_ports(len(added), avoid={*self.ports.values(), self.ctl_port}), strict=True):
            self.ports[name] = port
        for name in gone:
            self.ports.pop(name, None)
        self._empty(gone)
        self.cluster = cluster
        self.daemons.stop([f"slurmd-{n}" for n in gone])
        self._write()
        self._flush_accounting()  # node events (a health drain of a node leaving) must reach slurmdbd first
        self.daemons.stop(["slurmctld"])
        self._start_controller()
        for name in added:
            self._start_node(name)
        self.slurm.run("scontrol", "reconfigure", check=False)
        self.daemons.wait(self.nodes_up, f"slurmd of {len(new)} nodes after the node list changed")

    def _empty(self, nodes: list[str], timeout_s: float = 60.0) -> None:
        """Before ``nodes`` leave: drain those nobody drained (reason ``velyrix:scheduler: leaving the
        cluster``; a health drain keeps its own), requeue their jobs and wait until none runs there, so that
        the jobs start elsewhere and Slurm records each node's drain (slurmdbd gets it once the node is idle)."""
        if not nodes:
            return
        states = self.node_states()
        for name in nodes:
            if name in states and "drain" not in states[name] and states[name] not in ("drng", "drain"):
                reason = "velyrix:scheduler: leaving the cluster"
                self.slurm.run("scontrol", "update", f"NodeName={name}", "State=DRAIN", f"Reason={reason}", check=False)
        where = ",".join(nodes)
        jobs = self.slurm.run("squeue", "-h", "-w", where, "-o", "%A", check=False).stdout.split()
        if jobs:
            self.slurm.run("scontrol", "requeue", ",".join(sorted(set(jobs))), check=False)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            left = self.slurm.run("squeue", "-h", "-w", where, "-t", "R,CG", "-o", "%A", check=False).stdout
            if not left.strip():
                return
            time.sleep(0.3)

    def cancel_jobs(self, timeout_s: float = 30.0) -> None:
        """Cancel every job of this cluster and wait (at most ``timeout_s``) until none is left in the queue
        (sacctmgr refuses to delete an account with active jobs)."""
        if not self.running():
            return
        self.slurm.run("scancel", "--full", "--quiet", f"--user={self.accounting.user}", check=False)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.slurm.run("squeue", "-h", "-o", "%A", check=False).stdout.strip():
            time.sleep(0.3)

    def _flush_accounting(self, timeout_s: float = 30.0) -> None:
        """Wait until slurmctld's queue of messages to slurmdbd is empty (``sdiag``), at most ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            out = self.slurm.run("sdiag", check=False).stdout
            if "DBD Agent queue size: 0" in out or "DBD Agent queue size" not in out:
                return
            time.sleep(0.2)

    def stop(self) -> None:
        """Cancel every job, stop every slurmd and slurmctld, then end the job steps left behind (slurmstepd
        outlives its slurmd: those whose environment names this cluster's slurm.conf). The accounting stays."""
        self.cancel_jobs(timeout_s=10.0)
        self.daemons.stop()
        daemons.end_leftovers(f"SLURM_CONF={self.conf}")

    def running(self) -> bool:
        return self.daemons.running("slurmctld")

    def _write(self) -> None:
        o = dataclasses.replace(self.options, node_port_map=dict(self.ports))
        for d in (o.state_dir, o.spool_dir, o.log_dir, o.run_dir, str(self.job_map_root)):
            Path(d).mkdir(parents=True, exist_ok=True)
        for name in self.cluster.node_names:
            (Path(o.spool_dir) / name).mkdir(parents=True, exist_ok=True)  # slurmstepd's socket directory
            dev = self.root / "dev" / name
            dev.mkdir(parents=True, exist_ok=True)
            for i in range(self.cluster.group_of(name).gpus_per_node):
                (dev / f"nvidia{i}").touch()
        files = slurm_config.render(self.cluster, o)
        files.pop("slurmdbd.conf")  # the accounting's own
        slurm_config.write(files, self.conf_dir, slurm_user=self.accounting.user)

    def _start_controller(self) -> None:
        self.daemons.spawn("slurmctld", [_bin("slurmctld"), "-D", "-i"])
        self.daemons.wait(lambda: "UP" in self.slurm.run("scontrol", "ping", check=False).stdout, "slurmctld")

    def _start_node(self, name: str) -> None:
        argv = [_bin("slurmd"), "-D", "-N", name]
        if self.uts:  # the node's own hostname for its jobs; slurmd -N keeps the Slurm name either way
            argv = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', name, *argv]
        self.daemons.spawn(f"slurmd-{name}", argv)

    def node_states(self) -> dict[str, str]:
        """Slurm node name → compact state (``idle``, ``alloc``, ``drain``, ...) from sinfo."""
        proc = self.slurm.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
        return dict(ln.split()[:2] for ln in proc.stdout.splitlines() if len(ln.split()) >= 2)

    def nodes_idle(self) -> bool:
        states = self.node_states()
        return set(states) == set(self.cluster.node_names) and all(s == "idle" for s in states.values())

    def nodes_up(self) -> bool:
        """Every node of the list known and responding (idle, or busy with jobs)."""
        states = self.node_states()
        return set(states) == set(self.cluster.node_names) and all(
            not s.endswith("*") and s not in ("down", "unk", "boot") for s in states.values()
        )
