"""A real slurmctld reads the fabric planner's topology.conf (tree plugin)."""

from __future__ import annotations

import dataclasses
import os

import pytest

pytestmark = pytest.mark.slurm


def test_real_slurmctld_accepts_the_fabric_topology() -> None:
    from velyrix.ops.scheduler import clusters
    from velyrix.testing import slurm

    missing = slurm.missing_binaries()
    if missing:
        pytest.skip(f"Slurm twin needs {', '.join(missing)} (scripts/bootstrap.sh installs them)")
    if os.geteuid() != 0:
        pytest.skip("the Slurm twin runs slurmd as root (CI runs as root)")
    cluster = dataclasses.replace(clusters.twin(name="fab", node_count=4), fabric="infiniband-ndr")
    with slurm.SlurmTwin(cluster=cluster) as twin:
        assert "SwitchName=su00 Nodes=fab-[001-004]" in (twin.conf_dir / "topology.conf").read_text()
        shown = twin.slurm.out("scontrol", "show", "topology")
    assert "SwitchName=su00 Level=0" in shown and "Nodes=fab-[001-004]" in shown
    assert "SwitchName=spines Level=1" in shown and "Switches=su00" in shown
