"""The twin's scheduler service (``velyrix.controlplane.reconcile.scheduler.SchedulerService``): what
``velyrix up --slurm`` hands the reconcilers.

- ``slurm``: a real Slurm per cluster on loopback (``local_slurm.SlurmCluster``: its own slurmctld, one slurmd
  per delivered twin node with that node's hostname as its Slurm name and 8 GPU device files), accounting in
  one ``SlurmAccounting`` (munge, MariaDB, slurmdbd) shared by every cluster and started with the first. The
  tenant's accounting policy is converged with sacctmgr (``converging``): one account named after the tenant
  holding the local user that runs jobs. A changed node list (scale up/down, a replaced node) is followed
  with ``SlurmCluster.set_nodes``. ``remove`` stops the controller and its slurmds and deletes the
  cluster's accounts; slurmdbd keeps its job records (``sacct -M <cluster>``).
- ``kubernetes``: Kueue manifests (``kueue.render`` of the same default policy) and GPU manifests (NVIDIA GPU
  Operator ``ClusterPolicy``, node labels) as artifacts; the twin runs no Kubernetes control plane.

Work runs in one background thread (daemons start one cluster at a time: on a 2-core machine several at once
only slow each other); ``ensure``/``remove`` return at once with where it stands. Every node's job map is
``<root>/jobmap/<hostname>/`` (the prolog writes it); ``sync_load`` drives the twin: a node with a job mapped
runs its GPUs at ``JOB_LOAD_PCT``, back to idle when the epilog removed the map. ``close`` stops every daemon.

The daemons' state lives in ``$VELYRIX_HOME/slurm`` (``install``): after a restart of ``velyrix up --slurm`` the
clusters recorded as delivered are started again on it (``scheduler_resume``), with the same node names, the
accounting records of the shared slurmdbd and each slurmctld's saved state (its job ids go on).
"""

from __future__ import annotations

import concurrent.futures
import getpass
import hashlib
import logging
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from velyrix import settings
from velyrix.controlplane.reconcile import scheduler_resume
from velyrix.controlplane.reconcile import scheduler_service as delivery
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.fleet.drivers.sim import SimRegion
from velyrix.ops.scheduler import clusters, converging, kueue, local_slurm, policies, slurm_drains

log = logging.getLogger("velyrix.scheduler.twin")

JOB_LOAD_PCT = 100.0
"""GPU utilization (%) of a twin node while a Slurm job is mapped on it (the twin's training job runs flat out)."""


def slurm_name(target: delivery.Target) -> str:
    """The Slurm ClusterName: the cluster's name (letters and digits, lower case, 20 at most) and the last 6
    characters of its id, unique in the shared slurmdbd even when two tenants pick the same name."""
    clean = re.sub(r"[^a-z0-9]", "", target.name.lower())[:20] or "cluster"
    return clean + re.sub(r"[^a-z0-9]", "", target.cluster_id.lower())[-6:]


def account_name(tenant: str) -> str:
    """The tenant's Slurm account (lower case, letters, digits, ``_`` and ``-``)."""
    return re.sub(r"[^a-z0-9_-]", "-", tenant.lower())[:60] or "tenant"


def default_policy(cluster: str, tenant: str, user: str) -> policies.Policy:
    """The tenant's accounting policy on a delivered cluster: one account, the job-running user in it."""
    team = policies.Team(name=account_name(tenant), users=(user,))
    return policies.Policy(path="<delivered>", cluster=cluster, teams={team.name: team})


def kubernetes_artifacts(target: delivery.Target, user: str) -> dict[str, str]:
    """``kueue.yaml`` (ResourceFlavors, ClusterQueue, LocalQueue of the default policy) and ``gpu.yaml``
    (GPU Operator ClusterPolicy, node-type labels the ResourceFlavors select on) for ``target``."""
    sc = clusters.from_nodes(target.name, target.nodes, fabric=target.fabric)
    docs = kueue.render(default_policy(target.name, target.tenant, user), sc)
    gpu: list[dict[str, Any]] = [
        {
            "apiVersion": "nvidia.com/v1",
            "kind": "ClusterPolicy",
            "metadata": {"name": "cluster-policy"},
            "spec": {
                "driver": {"enabled": True},
                "toolkit": {"enabled": True},
                "devicePlugin": {"enabled": True},
                "gfd": {"enabled": True},
                "dcgmExporter": {"enabled": True},
                "migManager": {"enabled": False},
            },
        }
    ]
    for g in sc.groups:
        for name in g.names:
            labels = {kueue.NODE_TYPE_LABEL: g.node_type}
            gpu.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
    return {"kueue.yaml": kueue.to_yaml(docs), "gpu.yaml": kueue.to_yaml(gpu)}


@dataclass
class _Entry:
    target: delivery.Target
    name: str
    controller: local_slurm.SlurmCluster | None = None
    work: concurrent.futures.Future[None] | None = None
    error: str | None = None
    removed: bool = False
    loaded: set[str] = field(default_factory=set)
    """Twin nodes whose load this service set (only those go back to idle)."""


def install(app: Any, runtime: FleetRuntime, home: Path | None = None) -> TwinSchedulers:
    """``velyrix up --slurm``: a ``TwinSchedulers`` on ``runtime``'s twin, handed to its reconcilers and to the
    API's health path (``app.state.schedulers``), started, and the schedulers recorded as delivered by an
    earlier run delivered again (``scheduler_resume.Redelivery``). Its daemons keep their state (MariaDB's
    accounting records, slurmctld's job ids) in ``<home>/slurm`` (default ``$VELYRIX_HOME``), reached through a
    short link in /tmp (Unix socket paths must stay under 108 bytes) that ``close`` removes."""
    state = (home or settings.load().paths.home) / "slurm"
    state.mkdir(parents=True, exist_ok=True)
    service = TwinSchedulers(short_link(state), runtime.sim, unlink_root=True)
    runtime.reconciler.scheduler = service
    app.state.schedulers = service
    service.start()
    service.redelivery = scheduler_resume.Redelivery(app.state.sessionmaker, service)
    service.redelivery.start()
    return service


def short_link(target: Path) -> Path:
    """A short path in the temp directory (/tmp when TMPDIR is long) that links to ``target``, named after it."""
    base = tempfile.gettempdir()
    base = base if len(base) <= 16 else "/tmp"  # a long TMPDIR would push slurmstepd's sockets past the limit
    real = target.resolve()
    link = Path(base) / f"velyrix-slurm-{hashlib.sha256(str(real).encode()).hexdigest()[:12]}"
    if link.is_symlink() and link.resolve() == real:
        return link
    tmp = link.with_name(f"{link.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(real, target_is_directory=True)
    tmp.replace(link)  # a file of that name is replaced, never followed
    return link


class TwinSchedulers:
    """Schedulers of the twin's delivered clusters, under ``root`` (see the module doc)."""

    def __init__(
        self,
        root: Path,
        region: SimRegion | None = None,
        *,
        user: str | None = None,
        remove_root: bool = False,
        unlink_root: bool = False,
    ) -> None:
        """``remove_root``: ``close`` removes ``root`` (a directory made for this service); ``unlink_root``:
        ``root`` is a link (``short_link``) that ``close`` removes, leaving what it points to."""
        self.root = root
        self.remove_root = remove_root
        self.unlink_root = unlink_root
        self.redelivery: scheduler_resume.Redelivery | None = None
        self.region = region
        self.user = user or getpass.getuser()
        self.job_map_root = root / "jobmap"
        self.accounting: local_slurm.SlurmAccounting | None = None
        self.entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="velyrix-slurm")
        self._stop = threading.Event()
        self._loader: threading.Thread | None = None

    # SchedulerService -------------------------------------------------------------------------------
    def ensure(self, target: delivery.Target) -> delivery.Delivery:
        if target.kind == "kubernetes":
            return delivery.Delivery(
                delivery.ARTIFACTS,
                "Kueue and GPU manifests delivered as artifacts (velyrix scheduler kueue CLUSTER); "
                "the twin has no Kubernetes control plane: nothing applies them and no pod runs",
                artifacts=kubernetes_artifacts(target, self.user),
            )
        if target.kind != "slurm":
            return delivery.Delivery(delivery.FAILED, f"no delivery for scheduler '{target.kind}'")
        missing = local_slurm.missing_binaries()
        if missing:
            return delivery.Delivery(
                delivery.FAILED, f"Slurm needs {', '.join(missing)} on this host (scripts/bootstrap.sh installs them)"
            )
        with self._lock:
            entry = self.entries.get(target.cluster_id)
            if entry is None or entry.removed:
                entry = self.entries[target.cluster_id] = _Entry(target, slurm_name(target))
                entry.work = self._pool.submit(self._start, entry)
            if entry.work is not None and not entry.work.done():
                return delivery.Delivery(delivery.DELIVERING, f"starting Slurm {entry.name}")
            if entry.error:  # reported once; the next request (a new spec) starts over
                del self.entries[target.cluster_id]
                self._pool.submit(self._stop_failed, entry)
                return delivery.Delivery(delivery.FAILED, entry.error)
            if sorted(target.nodes) != sorted(entry.target.nodes):
                entry.target = target
                entry.work = self._pool.submit(self._reshape, entry)
                return delivery.Delivery(delivery.DELIVERING, f"Slurm {entry.name}: following the node list")
            return self._ready(entry)

    def remove(self, cluster_id: str) -> delivery.Delivery:
        with self._lock:
            entry = self.entries.get(cluster_id)
            if entry is None:
                return delivery.Delivery(delivery.REMOVED, "no scheduler runs for this cluster here")
            if entry.work is not None and not entry.work.done():
                return delivery.Delivery(delivery.DELIVERING, f"Slurm {entry.name}: waiting for its last change")
            if not entry.removed:
                entry.removed = True
                entry.work = self._pool.submit(self._remove, entry)
                return delivery.Delivery(delivery.DELIVERING, f"stopping Slurm {entry.name}")
            del self.entries[cluster_id]
            return delivery.Delivery(
                delivery.REMOVED,
                f"Slurm {entry.name}: slurmctld and slurmd stopped, accounts removed; "
                f"job records kept in slurmdbd (sacct -M {entry.name})",
            )

    # for the rest of the product ------------------------------------------------------------------
    def seam(self, cluster_id: str) -> slurm_drains.SlurmSeam | None:
        """The drain seam of the cluster's running Slurm (None when it has none)."""
        entry = self.entries.get(cluster_id)
        if entry is None or entry.controller is None or entry.removed or not entry.controller.running():
            return None
        return slurm_drains.SlurmSeam(entry.controller.slurm)

    def start(self, every_s: float = 1.0) -> None:
        """Drive the twin's GPU load from the job maps every ``every_s`` wall seconds, until ``close``."""
        self._loader = threading.Thread(target=self._load_loop, args=(every_s,), name="velyrix-slurm-load", daemon=True)
        self._loader.start()

    def close(self) -> None:
        """Stop every cluster's daemons, then the accounting."""
        self._stop.set()
        if self.redelivery is not None:
            self.redelivery.stop()
        self._pool.shutdown(wait=True, cancel_futures=True)
        for entry in list(self.entries.values()):
            if entry.controller is not None:
                entry.controller.stop()
        if self.accounting is not None:
            self.accounting.stop()
        if self.remove_root:
            shutil.rmtree(self.root, ignore_errors=True)
        if self.unlink_root and self.root.is_symlink():
            self.root.unlink()

    def sync_load(self) -> int:
        """Set each delivered twin node's load from its job map; returns the nodes running a job."""
        busy = 0
        for entry in list(self.entries.values()):
            if entry.controller is None or entry.removed or self.region is None:
                continue
            for host in entry.target.nodes:
                node = self.region.nodes.get(host)
                if node is None:
                    continue
                mapped = (self.job_map_root / host).is_dir() and any(
                    p.name.isdigit() for p in (self.job_map_root / host).iterdir()
                )
                if mapped:
                    busy += 1
                    if host not in entry.loaded:
                        self._set_load(host, JOB_LOAD_PCT)
                        entry.loaded.add(host)
                elif host in entry.loaded:
                    self._set_load(host, 0.0)
                    entry.loaded.discard(host)
        return busy

    def _set_load(self, host: str, load_pct: float) -> None:
        """The node's workload, its GPUs' gauges at once (a clock that stands still moves them no further)."""
        assert self.region is not None
        with self.region.lock:
            node = self.region.nodes[host]
            node.load_pct = load_pct
            for gpu in node.gpus:
                if gpu.responsive:
                    gpu.step(0.0, load_pct)

    # work (one at a time, in the pool's thread) -----------------------------------------------------
    def _ready(self, entry: _Entry) -> delivery.Delivery:
        assert entry.controller is not None
        n = len(entry.target.nodes)
        return delivery.Delivery(
            delivery.READY,
            f"Slurm {entry.name}: slurmctld up, {n} nodes registered and idle, account "
            f"{account_name(entry.target.tenant)} converged (velyrix scheduler env {entry.target.name})",
            env={"SLURM_CONF": entry.controller.conf, "SLURM_CLUSTER_NAME": entry.name},
        )

    def _cluster(self, entry: _Entry) -> clusters.SchedulerCluster:
        return clusters.from_nodes(entry.name, entry.target.nodes, fabric=entry.target.fabric)

    def _start(self, entry: _Entry) -> None:
        try:
            if self.accounting is None or not self.accounting.running():
                self.root.mkdir(parents=True, exist_ok=True)
                self.root.chmod(0o755)  # jobs' users reach their spool dirs
                self.accounting = local_slurm.SlurmAccounting(self.root / "accounting", self.user)
                self.accounting.start()
            entry.controller = local_slurm.SlurmCluster(
                self.root / "c" / entry.name[-6:],  # short: slurmstepd sockets live under it (108 bytes at most)
                self._cluster(entry),
                self.accounting,
                job_map_root=self.job_map_root,
            )
            entry.controller.start()
            self._converge(entry, default_policy(entry.name, entry.target.tenant, self.user))
        except Exception as exc:  # recorded for the reconciler: the cluster fails with the reason
            log.warning("Slurm %s: %s", entry.name, exc)
            entry.error = str(getattr(exc, "message", exc))

    def _reshape(self, entry: _Entry) -> None:
        try:
            assert entry.controller is not None
            entry.controller.set_nodes(self._cluster(entry))
        except Exception as exc:
            log.warning("Slurm %s: %s", entry.name, exc)
            entry.error = str(getattr(exc, "message", exc))

    def _remove(self, entry: _Entry) -> None:
        if entry.controller is None:
            return
        try:
            entry.controller.cancel_jobs()
            self._converge(entry, policies.Policy(path="<removed>", cluster=entry.name))
        except Exception as exc:  # the daemons stop anyway
            log.warning("Slurm %s: accounts not removed: %s", entry.name, exc)
        entry.controller.stop()
        for host in entry.loaded:
            if self.region is not None and host in self.region.nodes:
                self._set_load(host, 0.0)

    def _stop_failed(self, entry: _Entry) -> None:
        if entry.controller is not None:
            entry.controller.stop()

    def _converge(self, entry: _Entry, policy: policies.Policy) -> None:
        assert entry.controller is not None
        slurm = entry.controller.slurm
        changes = [c for c in converging.plan(policy, converging.read(slurm, entry.name)) if c.kind != "qos"]
        converging.apply(changes, slurm)  # QOS are global in slurmdbd: other clusters' stay

    def _load_loop(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            try:
                self.sync_load()
            except OSError as exc:  # an epilog removed a map while it was read
                log.debug("job maps: %s", exc)
