"""``velyrix demo`` cleans up after itself: the temporary home it runs its control plane in (SQLite, keys)
is gone when it exits. Runs the real command in a process of its own, on a 4-node declaration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SMALL = """provider "velyrix" { region = "us-east-1" }
resource "velyrix_cluster" "demo" {
  name       = "demo"
  node_type  = "hgx-h200-8g"
  node_count = 4
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 100
  }
}
"""


def test_demo_removes_its_temporary_home(tmp_path: Path) -> None:
    tf = tmp_path / "small.tf"
    tf.write_text(SMALL)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VELYRIX_")} | {"TMPDIR": str(scratch)}
    run = subprocess.run(
        [sys.executable, "-m", "velyrix.cli.main", "demo", "--file", str(tf), "--no-faults", "--speed", "20000"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "demo: Ready" in run.stdout and "valid" in run.stdout
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("velyrix-demo-")]
    assert "removed" in run.stdout
    from velyrix.ops.scheduler import local_slurm

    if not local_slurm.missing_binaries() and os.geteuid() == 0:  # after Ready, a job through the delivered Slurm
        assert "A job through the delivered Slurm" in run.stdout and "COMPLETED" in run.stdout, run.stdout[-3000:]
