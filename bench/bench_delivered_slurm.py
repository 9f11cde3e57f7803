"""What a Slurm delivered on the twin costs on this machine: one cluster of N real slurmd (``velyrix up --slurm``'s
``twin_delivery.TwinSchedulers``, the service the reconcilers call), for N in ``SIZES``.

For each size, in the same run: wall seconds from ``ensure`` to every node registered and idle (the first
size includes the start of the accounting, munge + MariaDB + slurmdbd, shared by every later cluster),
resident memory (VmRSS) of slurmctld and of the slurmds, seconds for ``srun -N N hostname``, and seconds to
follow a node list grown by one node (``set_nodes``: slurmctld restarted, ``scontrol reconfigure``).
Sizes with env ``BENCH_SLURM_SIZES`` (default ``4,16,32,64,128``).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

from velyrix.controlplane.reconcile import scheduler_service as delivery
from velyrix.ops.scheduler import local_slurm, twin_delivery

SIZES = [int(s) for s in os.environ.get("BENCH_SLURM_SIZES", "4,16,32,64,128").split(",")]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def target(n: int, k: int) -> delivery.Target:
    nodes = {f"bench-n{i:03d}": "hgx-h200-8g" for i in range(n)}
    return delivery.Target(f"clu_bench{n:03d}{k:04d}", f"bench{n}", "bench", "slurm", nodes)


def wait(service: twin_delivery.TwinSchedulers, t: delivery.Target) -> delivery.Delivery:
    while (d := service.ensure(t)).state == delivery.DELIVERING:
        time.sleep(0.2)
    return d


def main() -> None:
    if local_slurm.missing_binaries():
        print("skipped: needs", ", ".join(local_slurm.missing_binaries()))
        return
    service = twin_delivery.TwinSchedulers(Path(tempfile.mkdtemp(prefix="velyrix-slurm-")), remove_root=True)
    try:
        for k, n in enumerate(SIZES):
            t = target(n, k)
            started = time.perf_counter()
            d = wait(service, t)
            up_s = time.perf_counter() - started
            assert d.state == delivery.READY, d.message
            entry = service.entries[t.cluster_id]
            assert entry.controller is not None
            procs = entry.controller.daemons.procs
            ctl = rss_mib(procs["slurmctld"].pid)
            slurmd = [rss_mib(p.pid) for name, p in procs.items() if name.startswith("slurmd-")]
            env = {**os.environ, **d.env}
            started = time.perf_counter()
            argv = ["srun", "-N", str(n), "hostname"]
            out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
            srun_s = time.perf_counter() - started
            assert out.returncode == 0 and len(out.stdout.split()) == n, out.stderr
            more = {**t.nodes, f"bench-n{n:03d}": "hgx-h200-8g"}
            grown = delivery.Target(t.cluster_id, t.name, t.tenant, t.kind, more)
            started = time.perf_counter()
            assert wait(service, grown).state == delivery.READY
            grow_s = time.perf_counter() - started
            first = " (with the accounting)" if k == 0 else ""
            print(
                f"{n:4d} nodes: ready in {up_s:6.1f} s{first}; slurmctld {ctl:5.1f} MiB, slurmd {sum(slurmd):7.1f} MiB "
                f"({sum(slurmd) / len(slurmd):4.1f} MiB each); srun -N {n} hostname {srun_s:5.1f} s; "
                f"+1 node {grow_s:5.1f} s",
                flush=True,
            )
            while service.remove(t.cluster_id).state != delivery.REMOVED:
                time.sleep(0.2)
        acc = service.accounting
        if acc is not None:
            mem = sum(rss_mib(p.pid) for p in acc.daemons.procs.values())
            print(f"accounting (munged, mariadbd, slurmdbd): {mem:.1f} MiB")
    finally:
        service.close()


if __name__ == "__main__":
    main()
