"""A real multi-node Slurm (munge, MariaDB, slurmdbd, slurmctld, 4 slurmd) for the ``slurm`` tests."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

POLICY = Path(__file__).parent / "data" / "policy.hcl"

# The fair-share workload: (account, uid, GPUs, seconds). Every team and user gets distinct usage so that
# no two sibling accounts tie (Fair Tree merges tied accounts' children).
WORKLOAD = [("llm", 0, 4, 2), ("llm", 1, 2, 2), ("vision", 1, 1, 2), ("vision", 2, 3, 1), ("search", 2, 8, 3)]


@pytest.fixture(scope="session")
def slurm_twin() -> Iterator[object]:
    """The twin, started once per session, with the test policy applied and the workload submitted."""
    from velyrix.ops.scheduler import converging, policies
    from velyrix.testing import slurm

    missing = slurm.missing_binaries()
    if missing:
        pytest.skip(f"Slurm twin needs {', '.join(missing)} (scripts/bootstrap.sh installs them)")
    if os.geteuid() != 0:
        pytest.skip("the Slurm twin runs slurmd as root to start jobs as other users (CI runs as root)")
    twin = slurm.SlurmTwin()  # its own temp dir under /tmp: jobs run as daemon and bin must reach the spool
    twin.start()
    try:
        policy = policies.load(POLICY)
        twin.first_changes = converging.plan(policy, converging.read(twin.slurm, policy.cluster))
        converging.apply(twin.first_changes, twin.slurm)
        twin.workload_start = time.time()
        twin.workload = [twin.sbatch(account=a, uid=uid, gpus=g, wrap=f"sleep {s}") for a, uid, g, s in WORKLOAD]
        yield twin
    finally:
        twin.stop()
