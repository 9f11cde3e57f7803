"""Variable type constraints (``object()``, ``list()``, ``map()``, ``optional()``), Terraform's
conversions (``"64"`` is a number), ``validation`` blocks, ``sensitive`` and ``nullable``."""

from __future__ import annotations

from pathlib import Path

from tests.declarations.terraform.helpers import cluster, load, problems

OBJECT = """variable "shape" {
  type = object({
    nodes = number
    fabric = optional(string, "infiniband-ndr")
    tiers = optional(map(number), {})
    tags = list(string)
  })
  default = { nodes = "16", tags = ["a"] }
}
"""


def test_object_with_optional_attributes_and_defaults() -> None:
    spec = load(OBJECT + cluster(node_count="var.shape.nodes", fabric="var.shape.fabric"))
    assert spec.variables["shape"] == {"nodes": 16, "fabric": "infiniband-ndr", "tiers": {}, "tags": ["a"]}
    assert spec.clusters[0].node_count == 16


def test_complex_values_from_the_command_line_are_hcl() -> None:
    spec = load(OBJECT + cluster(node_count="var.shape.nodes"), variables={"shape": "{ nodes = 4, tags = [] }"})
    assert spec.clusters[0].node_count == 4
    out = problems(OBJECT + cluster(), variables={"shape": "{ tags = [] }"})
    assert "attribute 'nodes' is required" in out[0] and out[0].startswith("<command line>")


def test_list_and_map_types_convert_elements() -> None:
    text = 'variable "counts" {\n  type = map(number)\n  default = { a = "2" }\n}\n'
    assert load(text + cluster(node_count='var.counts["a"]')).clusters[0].node_count == 2
    text = 'variable "l" {\n  type = list(number)\n  default = ["x"]\n}\n'
    assert "default of variable 'l' is not a list(number)" in problems(text + cluster())[0]


def test_numbers_given_as_strings_convert_like_terraform() -> None:
    spec = load(cluster(node_count='"64"', body='  storage {\n    parallel_fs_tb = "800"\n  }'))
    assert spec.clusters[0].node_count == 64 and spec.clusters[0].storage.parallel_fs_tb == 800.0
    assert "must be a whole number" in problems(cluster(node_count='"sixty-four"'))[0]


def test_validation_blocks_report_their_message() -> None:
    text = (
        'variable "nodes" {\n  type = number\n  default = 8\n  validation {\n'
        '    condition = var.nodes % 4 == 0\n    error_message = "nodes must be a multiple of 4."\n  }\n}\n'
    )
    assert load(text + cluster(node_count="var.nodes")).clusters[0].node_count == 8
    out = problems(text + cluster(node_count="var.nodes"), variables={"nodes": "6"})
    assert out == [
        "main.tf:6:5: invalid value for variable 'nodes': nodes must be a multiple of 4. "
        "(expected a value that meets the condition (got 6))"
    ]


def test_sensitive_must_be_a_bool_and_hides_the_value_in_messages() -> None:
    out = problems('variable "s" {\n  default = "x"\n  sensitive = "yes"\n}\n' + cluster())
    assert "'sensitive' must be true or false" in out[0] and "main.tf:4:3" in out[0]
    text = (
        'variable "s" {\n  default = "x"\n  sensitive = true\n  validation {\n'
        '    condition = length(var.s) > 3\n    error_message = "too short"\n  }\n}\n'
    )
    out = problems(text + cluster())
    assert "(sensitive value)" in out[0] and '"x"' not in out[0]
    assert load(text.replace('"x"', '"long-enough"') + cluster()).sensitive_variables == ("s",)


def test_nullable_false_keeps_the_default_for_null(tmp_path: Path) -> None:
    tfvars = tmp_path / "null.tfvars"
    tfvars.write_text("n = null\n")
    text = 'variable "n" {\n  type = number\n  default = 8\n  nullable = false\n}\n'
    assert load(text + cluster(node_count="var.n"), var_files=[tfvars]).clusters[0].node_count == 8
    out = problems(text.replace("false", "true") + cluster(node_count="var.n"), var_files=[tfvars])
    assert "'node_count' must be a whole number, got null" in out[0]


def test_unknown_type_is_named_with_the_closest() -> None:
    out = problems('variable "x" {\n  type = lst(string)\n}\n' + cluster())
    assert "unknown variable type 'lst'" in out[0] and "did you mean 'list'" in out[0]
