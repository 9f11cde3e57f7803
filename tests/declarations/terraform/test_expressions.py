"""Conditionals, operators, ``for`` expressions, splats, index expressions, string templates and
heredocs, evaluated by HCL's rules."""

from __future__ import annotations

from tests.declarations.terraform.helpers import cluster, load, problems, value


def test_conditional_evaluates_only_the_chosen_branch() -> None:
    assert value('true ? "a" : "b"') == "a"
    assert value("length([]) > 0 ? [][0] : 7") == 7  # the false branch alone would be an error
    out = problems(cluster(node_count='"x" ? 1 : 2'))
    assert "condition: a bool is required" in out[0]


def test_operators_follow_terraform() -> None:
    assert value('"64" + 1') == 65
    assert value('1 == "1"') is False
    assert value("7 / 2") == 3.5 and value("-7 % 3") == -1
    assert value("!false && (1 < 2 || false)") is True
    out = problems(cluster(node_count='"a" * 2'))
    assert "unsupported operation" in out[0] and "a number is required" in out[0]


def test_for_expressions_filter_map_and_group() -> None:
    assert value('[for s in ["a", "b"] : upper(s) if s != "a"]') == ["B"]
    assert value("{for k, v in {a = 1, b = 2} : v => k}") == {"1": "a", "2": "b"}
    assert value('{for s in ["x", "y", "x"] : s => s...}') == {"x": ["x", "x"], "y": ["y"]}
    out = problems(cluster(node_count='length({for s in ["x", "x"] : s => 1})'))
    assert "duplicate key 'x'" in out[0]


def test_splat_and_index_expressions() -> None:
    prelude = "locals {\n  nodes = [{ n = 1 }, { n = 2 }]\n  m = { a = { b = [10, 20] } }\n}\n"
    assert value("local.nodes[*].n", prelude) == [1, 2]
    assert value("local.nodes.*.n", prelude) == [1, 2]
    assert value('local.m["a"].b[1]', prelude) == 20
    assert value("local.m.a.b.0", prelude) == 10
    out = problems(prelude + cluster(node_count="local.nodes[5].n"))
    assert "index 5 is out of range for a list of 2" in out[0]


def test_templates_interpolate_directives_and_escapes() -> None:
    assert value('"n=${1 + 1}"') == "n=2"
    assert value('"${8}"') == 8  # a lone interpolation is the value itself
    assert value('"%{ for n in [1, 2] }${n},%{ endfor }"') == "1,2,"
    assert value('"%{ if false }yes%{ else }no%{ endif }"') == "no"
    assert value('"a  %{~ if true ~}  b  %{~ endif ~} c"') == "abc"
    assert value('"$${x} %%{y} \\u0070\\t"') == "${x} %{y} p\t"


def test_heredocs_keep_lines_and_strip_common_indentation() -> None:
    text = cluster() + 'output "x" {\n  value = <<-EOT\n    gpus: ${8 * 8}\n      indented\n    EOT\n}\n'
    assert load(text).outputs["x"].value == "gpus: 64\n  indented\n"
    text = cluster() + 'output "x" {\n  value = <<EOT\nsay "hi" \\n\nEOT\n}\n'
    assert load(text).outputs["x"].value == 'say "hi" \\n\n'
