"""One job-mapping directory from the prolog to the agent: the prolog ``velyrix scheduler config`` writes by
default fills the directory the agent reads by default (and the one docs/telemetry.md names), and a job's
GPUs then carry its ``hpc_job`` label in the agent's scrape."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from velyrix.agent import jobs
from velyrix.cli import agent

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_prolog_feeds_the_default_agent(velyrix, tmp_path: Path) -> None:
    out = tmp_path / "slurm"
    res = velyrix("scheduler", "config", str(ROOT / "examples" / "acme-pretrain.tf"), "--out", str(out))
    assert res.exit_code == 0, res.stderr
    prolog = (out / "prolog.sh").read_text()
    (written,) = re.findall(r'^JOB_MAP_DIR="([^"]*)"$', prolog, re.M)
    assert written == jobs.JOB_MAP_DIR == str(agent.job_map_dir_for("nvml", None, None))
    assert f"`velyrix agent` reads `{jobs.JOB_MAP_DIR}`" in (ROOT / "docs" / "telemetry.md").read_text()

    # The generated prolog runs as slurmd runs it, with that directory placed under tmp_path (a test may not
    # write /run), then the agent reads the same place.
    node_dir = tmp_path / jobs.JOB_MAP_DIR.lstrip("/")
    script = tmp_path / "prolog.sh"
    script.write_text(prolog.replace(f'JOB_MAP_DIR="{written}"', f'JOB_MAP_DIR="{node_dir}"', 1))
    env = {
        "PATH": os.environ["PATH"],
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_GPUS": "0,3",
        "SLURMD_NODENAME": "acme-pretrain-001",
        "SLURM_JOB_USER": "alice",
        "SLURM_JOB_ACCOUNT": "llm",
    }
    env_check = {**env, "PATH": f"{tmp_path}:{env['PATH']}"}
    (tmp_path / "velyrix").write_text("#!/bin/sh\nexit 0\n")  # the prolog's health check: healthy
    (tmp_path / "velyrix").chmod(0o755)
    run = subprocess.run(["sh", str(script)], env=env_check, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    scrape = velyrix("agent", "--collector", "sim", "--once", "--job-map-dir", str(node_dir))
    assert scrape.exit_code == 0, scrape.stderr
    util = [ln for ln in scrape.stdout.splitlines() if ln.startswith("DCGM_FI_DEV_GPU_UTIL{")]
    tagged = {re.search(r'gpu="(\d+)"', ln).group(1) for ln in util if 'hpc_job="4242"' in ln}
    assert tagged == {"0", "3"}
    assert 'velyrix_job_info{hpc_job="4242"' in scrape.stdout and 'team="llm"' in scrape.stdout
