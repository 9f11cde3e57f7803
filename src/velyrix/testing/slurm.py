"""A real Slurm on one host for tests and demos: munge, MariaDB, slurmdbd, slurmctld and one slurmd per node.

The daemons are the product's (``velyrix.ops.scheduler.local_slurm``, what the twin's delivered clusters
run); ``SlurmTwin`` puts one accounting and one cluster in a single directory and adds what tests need
(``sbatch``, ``mark_unhealthy``, ``wait_jobs_done``). ``start()`` brings it all up and waits until every
node is idle; ``stop()`` ends exactly the processes it started.

    with SlurmTwin(tmp_path) as twin:
        twin.slurm.out("sinfo")
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from velyrix import errors
from velyrix.ops.scheduler import clusters, local_slurm
from velyrix.ops.scheduler.local_slurm import free_ports as free_ports
from velyrix.ops.scheduler.local_slurm import missing_binaries as missing_binaries

DAEMONS = local_slurm.DAEMONS


class SlurmTwin:
    """A multi-node Slurm cluster on this host, with accounting (slurmdbd + MariaDB).

    ``root``: working directory (None: a new temp dir, removed on ``stop``; a given one must be
    traversable by every user that runs jobs, unlike pytest's ``tmp_path``). ``cluster``: the twin
    cluster (default: 4 nodes x 8 H200 GPUs). ``health_check_command``: what the prolog runs; by default
    a node is unhealthy while the file ``<root>/unhealthy/<node>`` exists (``mark_unhealthy``).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        cluster: clusters.SchedulerCluster | None = None,
        *,
        health_check_command: str | None = None,
        start_timeout_s: float = 60.0,
    ) -> None:
        self._own_root = root is None
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="velyrix-slurm-"))
        # Jobs run as other users (sbatch --uid) read their script under the spool dir: keep the tree traversable.
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        self.cluster = cluster or clusters.twin()
        self.start_timeout_s = start_timeout_s
        self.accounting = local_slurm.SlurmAccounting(self.root)
        self.host, self.user = self.accounting.host, self.accounting.user
        # one name per node in the job map and on the prolog's command line: no hostname of its own needed
        self.controller = local_slurm.SlurmCluster(
            self.root, self.cluster, self.accounting, health_check_command=health_check_command, uts=False
        )
        self.db_port = self.accounting.db_port
        self.options = self.controller.options
        self.conf_dir = self.controller.conf_dir
        self.slurm = self.controller.slurm
        self.submitted: list[tuple[int, str | None, int]] = []

    @property
    def procs(self) -> dict[str, subprocess.Popen[bytes]]:
        """Every daemon this twin started, by name."""
        return {**self.accounting.daemons.procs, **self.controller.daemons.procs}

    # lifecycle -----------------------------------------------------------------------------------
    def __enter__(self) -> SlurmTwin:
        self.start()
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self, *, controller_only: bool = False) -> None:
        """Start the accounting, then the cluster; wait until nodes are idle.

        ``controller_only``: no slurmd (slurmctld needs slurmdbd at start): enough for ``scontrol show
        node`` to show the nodes as the generated slurm.conf declares them."""
        try:
            self.accounting.start()
            self.controller.start(controller_only=controller_only)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the daemons this twin started (cluster, then accounting), then remove a temp root."""
        self.controller.stop()
        self.accounting.stop()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    # helpers for tests ---------------------------------------------------------------------------
    def sbatch(
        self,
        *args: str,
        account: str | None = None,
        wrap: str = "sleep 1",
        gpus: int | None = None,
        uid: int | None = None,
    ) -> int:
        """Submit a batch job (``gpus`` GPUs, as user ``uid`` when given); returns its id.

        Every submission is recorded in ``submitted`` as (job id, account, GPUs)."""
        argv = ["--parsable", "-o", "/dev/null"]
        if account:
            argv.append(f"--account={account}")
        if gpus:
            argv.append(f"--gpus={gpus}")
        if uid is not None:
            argv += [f"--uid={uid}", "-D", "/tmp"]
        out = self.slurm.out("sbatch", *argv, *args, f"--wrap={wrap}")
        job_id = int(out.strip().split(";")[0])
        self.submitted.append((job_id, account, gpus or 0))
        return job_id

    def mark_unhealthy(self, node: str, unhealthy: bool = True) -> None:
        """Make the default health check of ``node`` fail (or pass again): its next prolog drains it."""
        flag = self.root / "unhealthy" / node
        flag.parent.mkdir(exist_ok=True)
        if unhealthy:
            flag.touch()
        else:
            flag.unlink(missing_ok=True)

    def last_priority_calc(self) -> float:
        """When slurmctld last recomputed fair-share (mtime of its ``priority_last_decay_ran``), UNIX s."""
        path = Path(self.options.state_dir) / "priority_last_decay_ran"
        return path.stat().st_mtime if path.exists() else 0.0

    def wait_jobs_done(self, job_ids: list[int], timeout_s: float = 60.0) -> None:
        """Wait until none of ``job_ids`` is pending or running any more."""
        deadline = time.monotonic() + timeout_s
        ids = ",".join(str(j) for j in job_ids)
        while time.monotonic() < deadline:
            out = self.slurm.run("squeue", "-h", "-j", ids, "-o", "%i", check=False).stdout
            if not out.strip():
                return
            time.sleep(0.5)
        raise errors.ExternalToolError(f"jobs {ids} still queued after {timeout_s:.0f} s")
