"""Slurm configuration generation: files, typed GPUs, topology from the fabric plan, prolog/epilog."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from velyrix.declarations import models
from velyrix.ops.scheduler import clusters, scripts, slurm_config, topology


def _spec(nodes: int = 64) -> models.ClusterSpec:
    return models.ClusterSpec(
        address="velyrix_cluster.t",
        name="train",
        region="eu-west-1",
        node_type="hgx-h200-8g",
        node_count=nodes,
        fabric="infiniband-ndr",
        scheduler="slurm",
    )


def test_cluster_spec_becomes_named_nodes_with_typed_gpus():
    c = clusters.from_spec(_spec(4))
    assert c.node_names == ["train-001", "train-002", "train-003", "train-004"]
    assert c.groups[0].gres_type == "h200" and c.gpus == 32


def test_gres_conf_lists_one_typed_gpu_per_device_file():
    c = clusters.from_spec(_spec(4))
    gres = slurm_config.gres_conf(c, slurm_config.SlurmOptions())
    lines = [ln for ln in gres.splitlines() if ln.startswith("NodeName=")]
    assert len(lines) == 32
    assert "NodeName=train-003 Name=gpu Type=h200 File=/dev/nvidia5 Cores=56-111" in lines


def test_slurm_conf_declares_nodes_partition_accounting_and_fair_tree():
    c = clusters.from_spec(_spec(4))
    conf = slurm_config.slurm_conf(c, slurm_config.SlurmOptions(controller_host="head-0"))
    assert (
        "NodeName=train-001 CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2" in conf and "Gres=gpu:h200:8" in conf
    )
    assert "PartitionName=gpu Nodes=train-001,train-002,train-003,train-004 Default=YES" in conf
    for line in (
        "SlurmctldHost=head-0",
        "PriorityType=priority/multifactor",
        "PreemptType=preempt/qos",
        "AccountingStorageTRES=gres/gpu,gres/gpu:h200",
        "ProctrackType=proctrack/cgroup",
        "Prolog=/etc/slurm/prolog.sh",
        "TopologyPlugin=topology/tree",
    ):
        assert line in conf.splitlines()


def test_topology_comes_from_the_fabric_plan_and_covers_every_node():
    c = clusters.from_spec(_spec(64))
    text = topology.topology_conf(c)
    switches = [ln for ln in text.splitlines() if ln.startswith("SwitchName=")]
    assert switches, text
    named = set()
    for ln in switches:
        for field in ln.split():
            if field.startswith("Nodes="):
                named.update(_expand(field[len("Nodes=") :]))
    assert set(c.node_names) <= named


def _expand(hostlist: str) -> list[str]:
    """Slurm hostlist (``a-[001-003,007],b``) to names; one bracket group per name is all Slurm prints here."""
    out = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", hostlist):
        m = re.fullmatch(r"(.*)\[(.*)\](.*)", part)
        if not m:
            out.append(part)
            continue
        for rng in m.group(2).split(","):
            lo, _, hi = rng.partition("-")
            for i in range(int(lo), int(hi or lo) + 1):
                out.append(f"{m.group(1)}{i:0{len(lo)}d}{m.group(3)}")
    return out


def test_fallback_topology_groups_nodes_by_scalable_unit():
    names = clusters.node_names("c", 40)
    text = topology.fallback_topology(names, su_nodes=32)
    assert "SwitchName=su1 Nodes=" + ",".join(names[32:]) in text
    assert "SwitchName=spine Switches=su0,su1" in text


def test_written_files_have_the_modes_slurm_requires(tmp_path: Path):
    files = slurm_config.render(clusters.twin(), slurm_config.SlurmOptions())
    slurm_config.write(files, tmp_path)
    assert (tmp_path / "slurmdbd.conf").stat().st_mode & 0o777 == 0o600
    assert os.access(tmp_path / "prolog.sh", os.X_OK)
    for script in ("prolog.sh", "epilog.sh"):
        assert subprocess.run(["sh", "-n", str(tmp_path / script)]).returncode == 0


def _run(script: str, tmp_path: Path, job: str, gpus: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "s.sh"
    path.write_text(script)
    env = {
        "PATH": os.environ["PATH"],
        "SLURM_JOB_ID": job,
        "SLURM_JOB_GPUS": gpus,
        "SLURMD_NODENAME": "n1",
        "SLURM_JOB_USER": "alice",
        "SLURM_JOB_ACCOUNT": "llm",
    }
    return subprocess.run(["sh", str(path)], env=env, capture_output=True, text=True)


def test_prolog_writes_one_mapping_file_per_gpu_and_epilog_removes_only_its_own(tmp_path: Path):
    jm = str(tmp_path / "jm") + "/${SLURMD_NODENAME}"
    assert _run(scripts.prolog("", jm), tmp_path, "41", "0,1").returncode == 0
    assert _run(scripts.prolog("", jm), tmp_path, "42", "2,5").returncode == 0
    d = tmp_path / "jm" / "n1"
    assert {p.name: p.read_text().strip() for p in d.iterdir() if p.is_file()} == {
        "0": "41",
        "1": "41",
        "2": "42",
        "5": "42",
    }
    assert '"team": "llm"' in (d / "jobs" / "42.json").read_text()
    assert _run(scripts.epilog("", jm), tmp_path, "42", "").returncode == 0
    assert sorted(p.name for p in d.iterdir() if p.is_file()) == ["0", "1"]
    assert not (d / "jobs" / "42.json").exists()


@pytest.mark.parametrize(("exit_code", "prolog_fails"), [(0, False), (1, True), (2, False), (127, False)])
def test_prolog_fails_only_when_the_health_check_says_unhealthy(tmp_path: Path, exit_code: int, prolog_fails: bool):
    proc = _run(scripts.prolog(f"exit {exit_code}", str(tmp_path / "jm")), tmp_path, "7", "0")
    assert (proc.returncode != 0) is prolog_fails
    if exit_code not in (0, 1):
        assert "health check unavailable" in proc.stderr
