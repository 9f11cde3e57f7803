"""Terraform's JSON syntax (``.tf.json``, ``.tfvars.json``) as the same positioned ``hcl.Block`` tree the
HCL parser gives: JSON strings are templates (``"${var.n}"``), numbers, bools and null are literals,
and keys known to hold blocks (``resource``, ``storage``, ``lifecycle`` ...) become blocks.

Positions: each key is found in the text in document order, so diagnostics point at its line:column.
"""

from __future__ import annotations

import json
from typing import Any

from velyrix import errors
from velyrix.declarations import evaluation, hcl, templates

LABELS = {"resource": 2, "data": 2, "variable": 1, "output": 1, "provider": 1, "module": 1, "locals": 0, "terraform": 0}
"""Top-level block types and how many labels their JSON nesting carries."""
NESTED_BLOCKS = {
    "storage": 0,
    "workload": 0,
    "acceptance": 0,
    "lifecycle": 0,
    "validation": 0,
    "dynamic": 1,
    "content": 0,
    "required_providers": 0,
    "backend": 1,
    "cloud": 0,
}
EXPRESSION_KEYS = ("depends_on", "ignore_changes", "type", "iterator", "replace_triggered_by")
"""Attributes whose JSON string is an expression (a reference or a type), not a template."""


class _Positions:
    """Finds ``"key"`` occurrences in document order to give each key its line and column."""

    def __init__(self, text: str) -> None:
        self.text, self.cursor = text, 0

    def of(self, key: str) -> tuple[int, int]:
        needle = json.dumps(key)
        at = self.text.find(needle, self.cursor)
        if at < 0:
            return (1, 1)
        self.cursor = at + len(needle)
        line = self.text.count("\n", 0, at) + 1
        return line, at - (self.text.rfind("\n", 0, at) + 1) + 1


def _load(text: str, filename: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject)
    except ValueError as exc:
        line, col = getattr(exc, "lineno", 1), getattr(exc, "colno", 1)
        raise errors.SpecError(
            [
                errors.Diagnostic(
                    filename, line, col, f"invalid JSON: {getattr(exc, 'msg', exc)}", expected="a JSON object"
                )
            ]
        ) from None


def _reject(word: str) -> Any:
    raise ValueError(f"{word} is not a number")


def parse(text: str, filename: str) -> hcl.Block:
    """The root block of a ``.tf.json`` file."""
    data = _load(text, filename)
    root = hcl.Block(type="", labels=[], line=1, column=1, file=filename)
    if not isinstance(data, dict):
        raise errors.SpecError(
            [errors.Diagnostic(filename, 1, 1, "a .tf.json file holds one JSON object", expected='{"resource": {...}}')]
        )
    pos = _Positions(text)
    for key, value in data.items():
        line, col = pos.of(key)
        if key == "//":
            continue
        if key not in LABELS:
            root.blocks.append(hcl.Block(type=key, labels=[], line=line, column=col, file=filename))
            continue
        for labels, body in _labelled(value, LABELS[key], pos):
            root.blocks.append(_block(key, labels, body, line, col, filename, pos))
    return root


def _labelled(value: Any, depth: int, pos: _Positions) -> list[tuple[list[str], Any]]:
    if depth == 0:
        return [([], v) for v in (value if isinstance(value, list) else [value])]
    out: list[tuple[list[str], Any]] = []
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, dict):
            continue
        for label, inner in item.items():
            pos.of(label)
            out += [([label, *rest], body) for rest, body in _labelled(inner, depth - 1, pos)]
    return out


def _block(kind: str, labels: list[str], body: Any, line: int, col: int, filename: str, pos: _Positions) -> hcl.Block:
    block = hcl.Block(type=kind, labels=labels, line=line, column=col, file=filename)
    if not isinstance(body, dict):
        return block
    for key, value in body.items():
        kline, kcol = pos.of(key)
        if key == "//":
            continue
        if key in NESTED_BLOCKS and kind != "locals" and (isinstance(value, dict) or _list_of_dicts(value)):
            for sub_labels, sub in _labelled(value, NESTED_BLOCKS[key], pos):
                block.blocks.append(_block(key, sub_labels, sub, kline, kcol, filename, pos))
        else:
            block.attributes.append(hcl.Attribute(key, expression(value, kline, kcol, key), kline, kcol))
    return block


def _list_of_dicts(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def expression(value: Any, line: int, col: int, key: str = "") -> Any:
    """The expression node of a JSON value (strings are templates, or expressions for reference keys)."""
    if isinstance(value, str):
        if key in EXPRESSION_KEYS:
            return _hcl_expression(value, line, col)
        return templates.from_source(value, line, col)
    if isinstance(value, list):
        return evaluation.JsonList([expression(v, line, col, key) for v in value], line, col)
    if isinstance(value, dict):
        return evaluation.JsonObject({k: expression(v, line, col) for k, v in value.items()}, line, col)
    return evaluation.Literal(value, line, col)


def _hcl_expression(text: str, line: int, col: int) -> Any:
    try:
        root = hcl.parse(f"x = {text}\n", "<json>")
    except errors.SpecError:
        raise evaluation.ExpressionError(line, col, f"not an expression: {text!r}") from None
    return root.attributes[0].expr


def parse_vars(text: str, filename: str) -> hcl.Block:
    """The root of a ``.tfvars.json`` file: one attribute per variable."""
    data = _load(text, filename)
    if not isinstance(data, dict):
        raise errors.SpecError(
            [errors.Diagnostic(filename, 1, 1, "a .tfvars.json file holds one JSON object", expected='{"name": value}')]
        )
    pos = _Positions(text)
    root = hcl.Block(type="", labels=[], line=1, column=1, file=filename)
    for key, value in data.items():
        line, col = pos.of(key)
        root.attributes.append(hcl.Attribute(key, evaluation.Literal(value, line, col), line, col))
    return root
