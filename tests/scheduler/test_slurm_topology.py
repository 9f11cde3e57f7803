"""The generated slurm.conf of a catalog cluster starts a real slurmctld, and ``scontrol show node``
shows the catalog's CPU topology and memory (not 112 one-core sockets); gres.conf binds GPUs to cores."""

from __future__ import annotations

import re

import pytest

from velyrix import catalog, errors
from velyrix.declarations import loader
from velyrix.ops.scheduler import clusters, slurm_config
from velyrix.testing.slurm import SlurmTwin, missing_binaries

from ..conftest import EXAMPLES


def _catalog_cluster() -> clusters.SchedulerCluster:
    spec = loader.load(EXAMPLES / "acme-pretrain.tf").clusters[0]
    full = clusters.from_spec(spec)
    g = full.groups[0]
    return clusters.SchedulerCluster(
        name=full.name, groups=(clusters.NodeGroup(**{**g.__dict__, "names": g.names[:2]}),)
    )


def test_node_lines_and_gres_affinity_follow_the_catalog() -> None:
    cluster = _catalog_cluster()
    files = slurm_config.render(cluster, slurm_config.SlurmOptions())
    nt = catalog.node_type("hgx-h200-8g")
    node = next(line for line in files["slurm.conf"].splitlines() if line.startswith("NodeName=acme-pretrain-001"))
    # DGX H200: 2 sockets x 56 cores x 2 threads = 224 CPUs; 90% of 2 TB for jobs, in MiB
    assert "CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2" in node
    assert f"RealMemory={int(nt.host_ram_gb * 1e9 / 2**20 * clusters.JOB_MEMORY_SHARE)}" in node
    gres = [line for line in files["gres.conf"].splitlines() if line.startswith("NodeName=acme-pretrain-001")]
    assert [re.search(r"Cores=(\S+)", line).group(1) for line in gres] == ["0-55"] * 4 + ["56-111"] * 4  # type: ignore[union-attr]


def test_a_storage_pass_slurmdbd_conf_cannot_hold_is_refused() -> None:
    ok = slurm_config.slurmdbd_conf(slurm_config.SlurmOptions(storage_pass="s3cr3t-Pw"))
    assert "StoragePass=s3cr3t-Pw" in ok
    assert "StoragePass" not in slurm_config.slurmdbd_conf(slurm_config.SlurmOptions())
    for bad in ("with space", "hash#tail", "new\nline"):
        with pytest.raises(errors.InvalidInputError, match="StoragePass"):
            slurm_config.slurmdbd_conf(slurm_config.SlurmOptions(storage_pass=bad))


@pytest.mark.slurm
@pytest.mark.skipif(bool(missing_binaries()), reason="apt-get install slurm-wlm slurmdbd munge mariadb-server")
def test_slurmctld_starts_on_the_generated_config_and_shows_the_topology() -> None:
    twin = SlurmTwin(cluster=_catalog_cluster())
    try:
        twin.start(controller_only=True)
        out = twin.slurm.out("scontrol", "show", "node", "acme-pretrain-001")
    finally:
        twin.stop()
    fields = dict(re.findall(r"(\w+)=(\S+)", out))
    assert (fields["Sockets"], fields["CoresPerSocket"], fields["ThreadsPerCore"]) == ("2", "56", "2")
    assert fields["CPUTot"] == "224" and fields["RealMemory"] == str(_catalog_cluster().groups[0].real_memory_mb)
    assert "gpu:h200:8" in fields["Gres"]
