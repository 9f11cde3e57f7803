"""Where configurations and values come from: a directory of ``.tf`` / ``.tf.json`` files,
``terraform.tfvars``, ``*.auto.tfvars(.json)``, ``-var-file`` ``.tfvars.json``, ``TF_VAR_*``, and
their precedence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.declarations.terraform.helpers import PROVIDER, cluster
from velyrix import errors
from velyrix.declarations import loader

VARIABLE = 'variable "nodes" {\n  type = number\n  default = 2\n}\n'


def write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def test_a_directory_is_one_configuration_with_per_file_positions(tmp_path: Path) -> None:
    d = write(tmp_path / "cfg", {"a.tf": PROVIDER + VARIABLE, "b.tf": cluster(node_count="var.nodes")})
    spec = loader.load(d, env={})
    assert spec.clusters[0].node_count == 2 and spec.clusters[0].position.file == str(d / "b.tf")
    (d / "c.tf").write_text(cluster("bad", name='"x"', node_cont="1"))
    with pytest.raises(errors.SpecError) as info:
        loader.load(d, env={})
    assert f"{d / 'c.tf'}:7:3: unknown attribute 'node_cont'" in str(info.value)


def test_tf_json_configuration(tmp_path: Path) -> None:
    doc = {
        "provider": {"velyrix": {"region": "us-east-1"}},
        "variable": {"nodes": {"type": "number", "default": 3}},
        "locals": {"name": "acme-${var.nodes}"},
        "resource": {
            "velyrix_cluster": {
                "training": {
                    "name": "${local.name}",
                    "node_type": "hgx-h200-8g",
                    "node_count": "${var.nodes * 2}",
                    "fabric": "infiniband-ndr",
                    "scheduler": "slurm",
                    "storage": {"parallel_fs_tb": 50},
                    "lifecycle": {"ignore_changes": ["node_count"]},
                }
            }
        },
        "output": {"n": {"value": "${velyrix_cluster.training.node_count}"}},
    }
    path = tmp_path / "main.tf.json"
    path.write_text(json.dumps(doc, indent=2))
    spec = loader.load(path, env={})
    (c,) = spec.clusters
    assert (c.name, c.node_count, c.storage.parallel_fs_tb) == ("acme-3", 6, 50.0)
    assert spec.outputs["n"].value == 6
    assert spec.lifecycles[c.address].ignore_changes == ("node_count",)
    doc["resource"]["velyrix_cluster"]["training"]["node_cont"] = 1
    text = json.dumps(doc, indent=2)
    path.write_text(text)
    line = text[: text.index('"node_cont"')].count("\n") + 1
    with pytest.raises(errors.SpecError) as info:
        loader.load(path, env={})
    assert f"{path}:{line}:9:" in str(info.value) and "did you mean 'node_count'" in str(info.value)


def test_precedence_env_then_tfvars_then_auto_then_var_file_then_var(tmp_path: Path) -> None:
    d = write(tmp_path, {"main.tf": PROVIDER + VARIABLE + cluster(node_count="var.nodes")})

    def nodes(**kw: Any) -> int:
        return loader.load(d, **kw).clusters[0].node_count

    assert nodes(env={}) == 2
    assert nodes(env={"TF_VAR_nodes": "3", "TF_VAR_undeclared": "x"}) == 3
    (d / "terraform.tfvars").write_text("nodes = 4\n")
    assert nodes(env={"TF_VAR_nodes": "3"}) == 4
    (d / "z.auto.tfvars.json").write_text('{"nodes": 5}')
    assert nodes(env={}) == 5
    extra = tmp_path / "extra.tfvars.json"
    extra.write_text('{"nodes": "6"}')
    assert nodes(env={}, var_files=[extra]) == 6
    assert nodes(env={}, var_files=[extra], variables={"nodes": "7"}) == 7


def test_cli_reads_directories_and_tf_var(velyrix: Any, tmp_path: Path, monkeypatch: Any) -> None:
    d = write(tmp_path / "cfg", {"main.tf": PROVIDER + VARIABLE + cluster(node_count="var.nodes")})
    monkeypatch.setenv("TF_VAR_nodes", "12")
    result = velyrix("plan", str(d), "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["resources"][0]["nodes"] == 12
    monkeypatch.setenv("TF_VAR_nodes", "twelve")
    bad = velyrix("plan", str(d))
    assert bad.exit_code == 2 and "<environment>" in bad.stderr and "TF_VAR_nodes" in bad.stderr
    empty = velyrix("plan", str(tmp_path / "cfg" / ".."))
    assert empty.exit_code == 2 and "no .tf or .tf.json files" in empty.stderr
