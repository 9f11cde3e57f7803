"""A cluster's operating mode in HCL and in the API's body: managed by default, self_operated when
declared, and a misspelt mode is an error at its file:line:column with the closest valid value."""

from __future__ import annotations

import pytest

from velyrix import errors
from velyrix.controlplane import specs
from velyrix.declarations import loader

HCL = """provider "velyrix" {
  region = "us-east-1"
}

resource "velyrix_cluster" "train" {
  name       = "train"
  node_type  = "hgx-h200-8g"
  node_count = 2
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
%s}
"""


def test_managed_is_the_default_and_self_operated_is_kept() -> None:
    assert loader.loads(HCL % "", "main.tf").clusters[0].operating_mode == "managed"
    spec = loader.loads(HCL % '  operating_mode = "self_operated"\n', "main.tf").clusters[0]
    assert spec.operating_mode == "self_operated"
    body = specs.ClusterSpecBody(**specs.to_body(spec))
    assert specs.validate(body).operating_mode == "self_operated"


def test_an_unknown_mode_names_its_line_and_the_closest_mode() -> None:
    with pytest.raises(errors.SpecError) as exc:
        loader.loads(HCL % '  operating_mode = "self-operated"\n', "main.tf")
    (diag,) = exc.value.diagnostics
    assert (diag.file, diag.line, diag.column) == ("main.tf", 11, 3)
    assert diag.suggestion == "self_operated"
