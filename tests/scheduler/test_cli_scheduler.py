"""``velyrix scheduler`` commands that need no running Slurm, and the drain seam's reason bookkeeping."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from velyrix import errors
from velyrix.ops.scheduler import commands, slurm_drains

ROOT = Path(__file__).resolve().parents[2]
POLICY = Path(__file__).parent / "data" / "policy.hcl"


def test_config_writes_every_file_for_a_declared_cluster(velyrix, tmp_path):
    res = velyrix(
        "scheduler",
        "config",
        str(ROOT / "examples" / "acme-pretrain.tf"),
        "--out",
        str(tmp_path),
        "--controller",
        "head-0",
    )
    assert res.exit_code == 0, res.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "cgroup.conf",
        "epilog.sh",
        "gres.conf",
        "prolog.sh",
        "slurm.conf",
        "slurmdbd.conf",
        "topology.conf",
    ]
    assert "SlurmctldHost=head-0" in (tmp_path / "slurm.conf").read_text()


def test_config_names_the_closest_cluster_when_the_name_is_wrong(velyrix, tmp_path):
    res = velyrix(
        "scheduler", "config", str(ROOT / "examples" / "acme-pretrain.tf"), "--out", str(tmp_path), "--cluster", "nope"
    )
    assert res.exit_code == 2 and "unknown cluster 'nope'" in res.stderr and "Traceback" not in res.stderr


def test_kueue_command_prints_yaml(velyrix):
    res = velyrix("scheduler", "kueue", str(POLICY), str(ROOT / "examples" / "acme-pretrain.tf"))
    assert res.exit_code == 0, res.stderr
    assert "kind: ClusterQueue" in res.stdout and "cohortName: research" in res.stdout
    assert "apiVersion: kueue.x-k8s.io/v1beta2" in res.stdout
    old = velyrix("scheduler", "kueue", str(POLICY), str(ROOT / "examples" / "acme-pretrain.tf"), "--api", "v1beta1")
    assert old.exit_code == 0 and "cohort: research" in old.stdout and "v1beta1" in old.stdout
    bad = velyrix("scheduler", "kueue", str(POLICY), str(ROOT / "examples" / "acme-pretrain.tf"), "--api", "v1beta3")
    assert bad.exit_code == 2 and "v1beta2" in bad.stderr


def test_report_rejects_a_bad_format_and_a_reversed_period(velyrix):
    bad = velyrix("scheduler", "report", "--from", "2026-11-01", "--to", "2026-12-01", "--format", "htm")
    assert bad.exit_code == 2 and "did you mean 'html'?" in bad.stderr
    rev = velyrix("scheduler", "report", "--from", "2026-12-01", "--to", "2026-11-01")
    assert rev.exit_code == 2 and "--to must be after --from" in rev.stderr


def test_policy_error_exits_2_with_position(velyrix, tmp_path):
    p = tmp_path / "p.hcl"
    p.write_text('team "a" {\n  gpu_limt = 3\n}\n')
    res = velyrix("scheduler", "plan", str(p))
    assert res.exit_code == 2 and "p.hcl:2:3: unknown attribute 'gpu_limt'" in res.stderr


def test_reasons_of_several_holders_round_trip():
    text = "velyrix:health: xid 79; bad fan; velyrix:noc: switch maintenance"
    held = slurm_drains.parse_reason(text)
    assert held == {"health": "velyrix:health: xid 79", "admin": "bad fan", "noc": "velyrix:noc: switch maintenance"}
    assert slurm_drains.parse_reason(slurm_drains.join_reason(held)) == held
    assert slurm_drains.parse_reason("none") == {}


class _ScriptedSlurm(commands.Slurm):
    """Our Slurm wrapper answering ``scontrol show node`` from a string and recording every command."""

    def __init__(self, show_node: str) -> None:
        super().__init__()
        self.show_node = show_node

    def run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        self.log.append([tool, *args])
        out = self.show_node if args[:2] == ("show", "node") else ""
        return subprocess.CompletedProcess([tool, *args], 0, out, "")


def test_reboot_keeps_the_holders_reason_and_asks_for_a_drained_return():
    slurm = _ScriptedSlurm(
        "NodeName=n1 Arch=x86_64\n   State=IDLE+DRAIN ThreadsPerCore=1\n"
        "   Reason=velyrix:health: xid 79 [root@2026-11-30T10:00:00]\n"
    )
    slurm_drains.SlurmSeam(slurm).reboot("n1", "xid 79 recovery")
    assert slurm.log[-1] == ["scontrol", "reboot", "ASAP", "nextstate=DOWN", "reason=velyrix:health: xid 79", "n1"]


def test_undrain_of_a_node_nobody_drained_is_a_no_op_and_others_raise():
    idle = _ScriptedSlurm("NodeName=n1\n   State=IDLE\n")
    slurm_drains.SlurmSeam(idle).undrain("n1", "health")
    assert not any(c[:2] == ["scontrol", "update"] for c in idle.log)
    drained = _ScriptedSlurm("NodeName=n1\n   State=IDLE+DRAIN\n   Reason=velyrix:noc: x [a@b]\n")
    with pytest.raises(errors.DrainOwnershipError):
        slurm_drains.SlurmSeam(drained).undrain("n1", "health")


def test_a_missing_slurm_conf_is_refused_at_once_with_exit_2(velyrix, tmp_path):
    # The Slurm tools themselves would retry a missing slurm.conf for 60 s before failing.
    missing = tmp_path / "nope" / "slurm.conf"
    res = velyrix("scheduler", "apply", str(POLICY), "--slurm-conf", str(missing))
    assert res.exit_code == 2, res.stderr
    assert f"slurm.conf not found: {missing}" in res.stderr and "--slurm-conf" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.skipif(
    not shutil.which("sacct") or os.path.exists(commands.DEFAULT_CONF),
    reason="needs Slurm's client tools and no slurm.conf at the default path",
)
def test_no_slurm_configuration_at_all_says_what_to_pass(velyrix, monkeypatch):
    monkeypatch.delenv("SLURM_CONF", raising=False)
    res = velyrix("scheduler", "report", "--from", "2026-11-01", "--to", "2026-12-01")
    assert res.exit_code == 1, res.stderr
    assert "sacct found no Slurm configuration (no /etc/slurm/slurm.conf" in res.stderr
    assert "--slurm-conf" in res.stderr and "Traceback" not in res.stderr
