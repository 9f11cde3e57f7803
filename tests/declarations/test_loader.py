"""The loader turns the examples into typed specs; variables behave as Terraform users expect."""

from __future__ import annotations

from pathlib import Path

import pytest

from velyrix import errors
from velyrix.declarations import loader

from ..conftest import EXAMPLES


def test_seed_cluster_is_read_exactly() -> None:
    spec = loader.load(EXAMPLES / "acme-pretrain.tf")
    (cluster,) = spec.clusters
    assert spec.region == "us-east-1"
    assert cluster.address == "velyrix_cluster.training"
    assert (cluster.name, cluster.node_type, cluster.node_count) == ("acme-pretrain", "hgx-h200-8g", 64)
    assert (cluster.fabric, cluster.scheduler) == ("infiniband-ndr", "slurm")
    assert cluster.storage.parallel_fs_tb == 800 and cluster.storage.object_tb == 2000
    assert cluster.gpus == 512
    assert cluster.position is not None and cluster.position.line == 3


def test_variable_defaults_and_interpolation() -> None:
    (cluster,) = loader.load(EXAMPLES / "small-h100-k8s.tf").clusters
    assert cluster.node_count == 4
    assert cluster.name == "research-finetune"
    assert cluster.acceptance.storage is False and cluster.acceptance.all_reduce is True


def test_cli_var_overrides_default_with_declared_type() -> None:
    (cluster,) = loader.load(EXAMPLES / "small-h100-k8s.tf", variables={"node_count": "8", "team": "t42"}).clusters
    assert cluster.node_count == 8
    assert cluster.name == "t42-finetune"
    with pytest.raises(errors.SpecError) as caught:  # a string variable stays a string: "42", not 42.0
        loader.load(EXAMPLES / "small-h100-k8s.tf", variables={"team": "42"})
    assert "'name' = \"42-finetune\" must be" in caught.value.message  # the API's rule: a name starts with a letter


def test_var_file_sets_values(tmp_path: Path) -> None:
    tfvars = tmp_path / "big.tfvars"
    tfvars.write_text('node_count = 16\nteam = "vision"\n')
    (cluster,) = loader.load(EXAMPLES / "small-h100-k8s.tf", var_files=[tfvars]).clusters
    assert (cluster.node_count, cluster.name) == (16, "vision-finetune")


def test_var_file_errors_point_into_the_var_file(tmp_path: Path) -> None:
    tfvars = tmp_path / "bad.tfvars"
    tfvars.write_text("\nnode_cuont = 16\n")
    with pytest.raises(errors.SpecError) as info:
        loader.load(EXAMPLES / "small-h100-k8s.tf", var_files=[tfvars])
    (diag,) = info.value.diagnostics
    assert (diag.file, diag.line, diag.suggestion) == (str(tfvars), 2, "node_count")


def test_all_errors_of_a_file_are_reported_at_once() -> None:
    text = (EXAMPLES / "acme-pretrain.tf").read_text()
    text = text.replace('"hgx-h200-8g"', '"hgx-h200"').replace('"slurm"', '"slrum"').replace("object_tb", "objet_tb")
    with pytest.raises(errors.SpecError) as info:
        loader.loads(text, "x.tf")
    lines = sorted(d.line for d in info.value.diagnostics)
    assert lines == [5, 8, 11]
    assert {d.suggestion for d in info.value.diagnostics} == {"hgx-h200-8g", "slurm", "object_tb"}


def test_region_on_resource_overrides_provider() -> None:
    text = (
        (EXAMPLES / "acme-pretrain.tf")
        .read_text()
        .replace("node_count = 64", 'node_count = 64\n  region     = "eu-west-1"')
    )
    (cluster,) = loader.loads(text, "x.tf").clusters
    assert cluster.region == "eu-west-1"


def test_capacity_is_per_region() -> None:
    text = (EXAMPLES / "acme-pretrain.tf").read_text().replace("node_count = 64", "node_count = 300")
    loader.loads(text, "x.tf")  # us-east-1 has room
    with pytest.raises(errors.SpecError, match="exceeds eu-west-1's capacity of 256"):
        loader.loads(text.replace('"us-east-1"', '"eu-west-1"'), "x.tf")


def test_workload_block_builds_typed_workload() -> None:
    text = (
        (EXAMPLES / "acme-pretrain.tf")
        .read_text()
        .replace(
            "  # 512 GPUs",
            "  workload {\n    model_params = 405e9\n    checkpoint_interval_s = 1800\n"
            '    checkpoint_mode = "async"\n    tp = 8\n    pp = 8\n  }\n  # 512 GPUs',
        )
    )
    (cluster,) = loader.loads(text, "x.tf").clusters
    assert cluster.workload is not None
    assert cluster.workload.model_params == 405e9
    assert cluster.workload.checkpoint_interval_s == 1800
    assert (cluster.workload.tp, cluster.workload.pp, cluster.workload.checkpoint_mode) == (8, 8, "async")


def test_interval_accepts_auto() -> None:
    text = (
        (EXAMPLES / "acme-pretrain.tf")
        .read_text()
        .replace(
            "  # 512 GPUs",
            '  workload {\n    model_params = 7e9\n    checkpoint_interval_s = "auto"\n  }\n  # 512 GPUs',
        )
    )
    (cluster,) = loader.loads(text, "x.tf").clusters
    assert cluster.workload is not None and cluster.workload.checkpoint_interval_s == "auto"


def test_unreadable_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(errors.SpecError, match="cannot read file"):
        loader.load(tmp_path / "missing.tf")
