"""Small helpers for the Terraform language tests: a cluster block, loading text, the diagnostics."""

from __future__ import annotations

from typing import Any

import pytest

from velyrix import errors
from velyrix.declarations import loader, models

PROVIDER = 'provider "velyrix" { region = "us-east-1" }\n'


def cluster(label: str = "training", body: str = "", **args: Any) -> str:
    """A velyrix_cluster block with valid defaults; ``args`` replace them (values as HCL text)."""
    values = {
        "name": '"acme"',
        "node_type": '"hgx-h200-8g"',
        "node_count": "8",
        "fabric": '"infiniband-ndr"',
        "scheduler": '"slurm"',
    }
    values.update(args)
    lines = "\n".join(f"  {k} = {v}" for k, v in values.items() if v is not None)
    return f'resource "velyrix_cluster" "{label}" {{\n{lines}\n{body}\n}}\n'


def load(text: str, **kw: Any) -> models.SpecFile:
    return loader.loads(PROVIDER + text, "main.tf", **kw)


def problems(text: str, **kw: Any) -> list[str]:
    """The rendered diagnostics of ``text`` (which must fail to load)."""
    with pytest.raises(errors.SpecError) as info:
        load(text, **kw)
    return [d.render() for d in info.value.diagnostics]


def value(expr: str, prelude: str = "") -> Any:
    """The value of ``expr`` through an output of a minimal configuration."""
    spec = load(prelude + cluster() + f'output "x" {{\n  value = {expr}\n}}\n')
    return spec.outputs["x"].value
