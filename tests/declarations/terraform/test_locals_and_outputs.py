"""``locals`` (evaluated on demand, cycles and misspellings reported) and ``output`` values, including
``velyrix output`` and sensitive outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.declarations.terraform.helpers import PROVIDER, cluster, load, problems


def test_locals_refer_to_variables_and_each_other_in_any_order() -> None:
    spec = load(
        'variable "per_su" {\n  default = 4\n}\n'
        "locals {\n  nodes = local.sus * var.per_su\n  sus = 2\n}\n" + cluster(node_count="local.nodes")
    )
    assert spec.clusters[0].node_count == 8


def test_local_cycle_and_misspelled_local_are_errors() -> None:
    out = problems("locals {\n  a = local.b\n  b = local.a\n}\n" + cluster(node_count="local.a"))
    assert any("refers to itself (a cycle)" in p for p in out)
    out = problems("locals {\n  nodes = 8\n}\n" + cluster(node_count="local.node"))
    assert "undeclared local value 'local.node'" in out[0] and "did you mean 'local.nodes'" in out[0]


def test_outputs_are_computed_and_shown_by_velyrix_output(velyrix: Any, tmp_path: Path) -> None:
    tf = tmp_path / "main.tf"
    tf.write_text(
        PROVIDER
        + cluster()
        + 'variable "token" {\n  default = "s3cret"\n  sensitive = true\n}\n'
        + 'output "gpus" {\n  value = velyrix_cluster.training.node_count * 8\n}\n'
        + 'output "token" {\n  value = var.token\n  sensitive = true\n}\n'
    )
    listed = velyrix("output", str(tf))
    assert listed.exit_code == 0 and listed.stdout == "gpus = 64\ntoken = <sensitive>\n"
    assert velyrix("output", str(tf), "gpus", "-raw").stdout == "64"
    assert velyrix("output", str(tf), "token").stdout == '"s3cret"\n'
    as_json = json.loads(velyrix("output", str(tf), "-json").stdout)
    assert as_json["gpus"] == {"sensitive": False, "type": "number", "value": 64}
    missing = velyrix("output", str(tf), "gpu")
    assert missing.exit_code == 2 and "did you mean 'gpus'" in missing.stderr


def test_an_output_of_a_sensitive_value_must_be_marked_sensitive() -> None:
    text = 'variable "token" {\n  default = "x"\n  sensitive = true\n}\nlocals {\n  t = var.token\n}\n'
    out = problems(text + cluster() + 'output "t" {\n  value = "${local.t}!"\n}\n')
    assert "output 't' refers to sensitive values" in out[0] and "sensitive = true" in out[0]


def test_output_without_value_and_unknown_attribute_are_errors() -> None:
    out = problems(cluster() + 'output "x" {\n  valeu = 1\n}\n')
    assert any("did you mean 'value'" in p for p in out) and any("has no value" in p for p in out)


def test_every_broken_local_is_reported_once_even_when_unreferenced() -> None:
    text = (
        'locals {\n  a = format("%99999s", "x")\n  b = pow(10, 400)\n  c = [for i in range(5000) : i]\n'
        '  d = jsondecode("[NaN]")\n  e = 5 / 0\n}\n'
    )
    out = problems(text + cluster() + 'output "x" {\n  value = local.b\n}\n')
    assert [p.split(": ", 1)[0] for p in out] == [
        "main.tf:3:7",
        "main.tf:4:7",
        "main.tf:5:17",
        "main.tf:6:7",
        "main.tf:7:7",
    ]
    assert "width or precision above 10000" in out[0] and "division by zero" in out[-1]
