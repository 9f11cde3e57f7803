"""Every function Velyrix evaluates, with Terraform's documented results, and the list in
docs/terraform-language.md kept equal to the functions that exist."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.declarations.terraform.helpers import cluster, problems, value
from velyrix.declarations import functions

from ...conftest import ROOT

CASES: dict[str, list[tuple[str, Any]]] = {
    "format": [('format("%s-%03d", "node", 7)', "node-007"), ('format("%.1f%%", 12.345)', "12.3%")],
    "formatlist": [('formatlist("n%d", [1, 2])', ["n1", "n2"])],
    "join": [('join("-", ["a", "b"], ["c"])', "a-b-c")],
    "split": [('split(",", "a,b,c")', ["a", "b", "c"]), ('split(",", "")', [])],
    "lower": [('lower("HGX")', "hgx")],
    "upper": [('upper("hgx")', "HGX")],
    "title": [('title("acme pretrain")', "Acme Pretrain")],
    "trimspace": [('trimspace("  x \\n")', "x")],
    "trim": [('trim("?!hello?!", "!?")', "hello")],
    "trimprefix": [('trimprefix("hgx-h200", "hgx-")', "h200")],
    "trimsuffix": [('trimsuffix("a.tf", ".tf")', "a")],
    "replace": [('replace("a-b-c", "-", "_")', "a_b_c"), ('replace("h200", "/h(\\\\d+)/", "H$1")', "H200")],
    "substr": [('substr("hello world", 1, 4)', "ello"), ('substr("hello", -3, -1)', "llo")],
    "strrev": [('strrev("abc")', "cba")],
    "chomp": [('chomp("x\\n\\n")', "x")],
    "indent": [('indent(2, "a\\nb")', "a\n  b")],
    "startswith": [('startswith("hgx-h200", "hgx")', True)],
    "endswith": [('endswith("hgx-h200", "h100")', False)],
    "strcontains": [('strcontains("infiniband-ndr", "ndr")', True)],
    "regex": [('regex("[0-9]+", "h200-8g")', "200")],
    "regexall": [('regexall("[0-9]+", "h200-8g")', ["200", "8"])],
    "abs": [("abs(-3)", 3)],
    "ceil": [("ceil(4.1)", 5)],
    "floor": [("floor(4.9)", 4)],
    "log": [("log(8, 2)", 3)],
    "max": [("max(3, 64, 7)", 64), ("max([1, 9]...)", 9)],
    "min": [("min(3, 64, 7)", 3)],
    "pow": [("pow(2, 10)", 1024)],
    "signum": [("signum(-5)", -1)],
    "parseint": [('parseint("ff", 16)', 255)],
    "base64encode": [('base64encode("velyrix")', "dmVseXJpeA==")],
    "base64decode": [('base64decode("dmVseXJpeA==")', "velyrix")],
    "jsonencode": [("jsonencode({a = 1, b = [true]})", '{"a":1,"b":[true]}')],
    "jsondecode": [('jsondecode("{\\"n\\": 64}")', {"n": 64})],
    "urlencode": [('urlencode("a b/c")', "a%20b%2Fc")],
    "csvdecode": [('csvdecode("a,b\\n1,2")', [{"a": "1", "b": "2"}])],
    "md5": [('md5("x")', "9dd4e461268c8034f5c8564e155c67a6")],
    "sha1": [('sha1("x")', "11f6ad8ec52a2984abaafd7c3b516503785c2072")],
    "sha256": [('sha256("x")', "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881")],
    "sha512": [('length(sha512("x"))', 128)],
    "length": [("length([1, 2, 3])", 3), ("length({a = 1})", 1), ('length("hgx")', 3)],
    "lookup": [('lookup({a = 1}, "a", 0)', 1), ('lookup({a = 1}, "b", 0)', 0)],
    "merge": [("merge({a = 1, b = 2}, {b = 3})", {"a": 1, "b": 3})],
    "keys": [("keys({b = 1, a = 2})", ["a", "b"])],
    "values": [("values({b = 1, a = 2})", [2, 1])],
    "concat": [("concat([1], [2, 3])", [1, 2, 3])],
    "contains": [('contains(["a", "b"], "b")', True)],
    "element": [('element(["a", "b"], 3)', "b")],
    "index": [('index(["a", "b"], "b")', 1)],
    "flatten": [("flatten([[1], [2, [3]]])", [1, 2, 3])],
    "distinct": [("distinct([1, 1, 2])", [1, 2])],
    "compact": [('compact(["a", "", null, "b"])', ["a", "b"])],
    "chunklist": [("chunklist([1, 2, 3], 2)", [[1, 2], [3]])],
    "range": [("range(3)", [0, 1, 2]), ("range(1, 7, 3)", [1, 4])],
    "reverse": [("reverse([1, 2])", [2, 1])],
    "slice": [("slice([0, 1, 2, 3], 1, 3)", [1, 2])],
    "sort": [('sort(["b", "a"])', ["a", "b"])],
    "sum": [("sum([1, 2.5])", 3.5)],
    "zipmap": [('zipmap(["a", "b"], [1, 2])', {"a": 1, "b": 2})],
    "one": [("one([5])", 5), ("one([])", None)],
    "coalesce": [('coalesce("", "x")', "x")],
    "coalescelist": [("coalescelist([], [1])", [1])],
    "alltrue": [("alltrue([true, true])", True)],
    "anytrue": [("anytrue([false, true])", True)],
    "setunion": [("setunion([1], [1, 2])", [1, 2])],
    "setintersection": [("setintersection([1, 2], [2, 3])", [2])],
    "setsubtract": [("setsubtract([1, 2], [2])", [1])],
    "transpose": [('transpose({a = ["x"], b = ["x", "y"]})', {"x": ["a", "b"], "y": ["b"]})],
    "tostring": [("tostring(64)", "64")],
    "tonumber": [('tonumber("64")', 64)],
    "tobool": [('tobool("true")', True)],
    "tolist": [("tolist([1])", [1])],
    "toset": [('toset(["a", "a"])', ["a"])],
    "tomap": [("tomap({a = 1})", {"a": 1})],
    "file": [('trimspace(file("${path.module}/notes.txt"))', "hello")],
    "fileexists": [('fileexists("no-such-file")', False)],
    "try": [("try(local.missing, 7)", 7)],
    "can": [('can(tonumber("x"))', False), ('can(tonumber("1"))', True)],
}


@pytest.mark.parametrize(
    ("expr", "expected"), [c for cases in CASES.values() for c in cases], ids=[e for c in CASES.values() for e, _ in c]
)
def test_function(expr: str, expected: Any, tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("hello\n")
    prelude = "locals {\n  x = 1\n}\n"
    assert value(expr.replace("${path.module}", str(tmp_path)), prelude) == expected


def test_every_function_has_a_case_and_a_documented_line() -> None:
    assert sorted(CASES) == functions.documented()
    doc = (ROOT / "docs" / "terraform-language.md").read_text()
    listed = set(re.findall(r"`([a-z0-9]+)\(`", doc))
    assert listed == set(functions.documented())


def test_wrong_arguments_are_reported_with_position_and_closest_name() -> None:
    out = problems(cluster(node_count="lenght([1])"))
    assert "main.tf:5:" in out[0] and "unknown function 'lenght'" in out[0] and "did you mean 'length'" in out[0]
    out = problems(cluster(node_count="max()"))
    assert "max(): takes at least 1 argument" in out[0]
    out = problems(cluster(node_count='lookup({a = 1}, "b")'))
    assert "no key 'b'" in out[0]
