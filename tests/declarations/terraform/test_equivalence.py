"""A Terraform-style configuration (locals, outputs, merge/lookup/format, a conditional, count, a for
expression) plans exactly the cluster of examples/acme-pretrain.tf."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...conftest import EXAMPLES

HERE = Path(__file__).parent


def test_terraform_style_file_plans_the_seed_cluster(velyrix: Any) -> None:
    seed = velyrix("plan", str(EXAMPLES / "acme-pretrain.tf"), "--json")
    rewritten = velyrix("plan", str(HERE / "acme-pretrain-terraform.tf"), "--json")
    assert seed.exit_code == 0 and rewritten.exit_code == 0, rewritten.stderr
    a, b = json.loads(seed.stdout), json.loads(rewritten.stdout)
    assert a.pop("file") != b.pop("file")
    assert a == b
    text = (HERE / "acme-pretrain-terraform.tf").read_text()
    for construct in ("locals {", "output ", "merge(", "lookup(", "format(", " ? ", "count ", "{ for "):
        assert construct in text, construct
    outputs = velyrix("output", str(HERE / "acme-pretrain-terraform.tf"))
    assert outputs.stdout == 'gpus = 512\ncluster_names = ["acme-pretrain"]\n'


def test_the_dev_environment_adds_the_canary_from_count(velyrix: Any) -> None:
    result = velyrix("plan", str(HERE / "acme-pretrain-terraform.tf"), "-var", "environment=dev", "--json")
    plan = json.loads(result.stdout)
    assert [(r["address"], r["nodes"]) for r in plan["resources"]] == [
        ("velyrix_cluster.training", 4),
        ("velyrix_cluster.canary[0]", 1),
    ]
