"""The ``terraform {}`` block: ``required_version``, ``required_providers`` (source address and version
constraint of the velyrix provider) checked; backends and ``cloud`` refused (the control plane is the
state, docs/terraform-language.md); anything else named with the closest valid word.

Input: the ``terraform`` blocks of a configuration and a scope-free evaluator. Output: diagnostics
appended to the checker (``diagnostics.Checker``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import velyrix
from velyrix.declarations import diagnostics, hcl

PROVIDER_SOURCES = ("velyrix/velyrix", "registry.terraform.io/velyrix/velyrix")
"""The velyrix provider's source address, short and with the default registry host."""
PROVIDER_VERSION = velyrix.__version__
TERRAFORM_ATTRIBUTES = ("required_version",)
TERRAFORM_BLOCKS = ("required_providers", "backend", "cloud")

_CONSTRAINT = re.compile(r"^\s*(=|!=|>=|<=|>|<|~>)?\s*v?(\d+(?:\.\d+){0,2})(-[0-9A-Za-z.-]+)?\s*$")


def parse_version(text: str) -> tuple[int, int, int]:
    """``"1.2"`` as ``(1, 2, 0)``."""
    parts = [int(p) for p in text.split(".")]
    return (parts + [0, 0])[:3]  # type: ignore[return-value]


def satisfies(version: str, constraint: str) -> bool | None:
    """Whether ``version`` meets ``constraint`` (``"~> 0.1, != 0.1.3"``); None when it is malformed."""
    have = parse_version(version)
    for piece in constraint.split(","):
        m = _CONSTRAINT.match(piece)
        if not m:
            return None
        op, text = m.group(1) or "=", m.group(2)
        want = parse_version(text)
        if not _one(op, have, want, text.count(".") + 1):
            return False
    return True


def _one(op: str, have: tuple[int, int, int], want: tuple[int, int, int], given: int) -> bool:
    if op == "~>":
        # ~> 1.2 allows 1.x >= 1.2; ~> 1.2.3 allows 1.2.x >= 1.2.3 (the rightmost part may grow)
        keep = max(given - 1, 1)
        return have >= want and have[:keep] == want[:keep]
    return {
        "=": have == want,
        "!=": have != want,
        ">": have > want,
        ">=": have >= want,
        "<": have < want,
        "<=": have <= want,
    }[op]


def check(blocks: list[hcl.Block], chk: diagnostics.Checker, value_of: Callable[[Any], Any]) -> None:
    """Check every ``terraform {}`` block; ``value_of`` evaluates a constant expression."""
    for block in blocks:
        file = block.file or None
        if block.labels:
            chk.error(block.line, block.column, "a terraform block takes no labels", "terraform { ... }", file=file)
        for attr in block.attributes:
            if attr.name not in TERRAFORM_ATTRIBUTES:
                chk.unknown(attr.line, attr.column, "argument", attr.name, TERRAFORM_ATTRIBUTES, "in terraform", file)
                continue
            _constraint(attr, chk, value_of, "required_version", file)
        for inner in block.blocks:
            if inner.type == "required_providers":
                _required_providers(inner, chk, value_of, file)
            elif inner.type in ("backend", "cloud"):
                what = f'backend "{inner.labels[0]}"' if inner.type == "backend" and inner.labels else inner.type
                chk.error(
                    inner.line,
                    inner.column,
                    f"{what} is not implemented: Velyrix keeps the state on its control plane",
                    expected="no backend block (velyrix login points plan and apply at the control plane)",
                    file=file,
                )
            else:
                chk.unknown(inner.line, inner.column, "block", inner.type, TERRAFORM_BLOCKS, "in terraform", file)


def _constraint(attr: hcl.Attribute, chk: diagnostics.Checker, value_of: Any, what: str, file: str | None) -> None:
    value = _evaluated(attr.expr, attr, chk, value_of, file)
    if value is None:
        return
    if not isinstance(value, str) or satisfies("0.0.0", value) is None:
        chk.error(
            attr.line,
            attr.column,
            f"{what} is not a version constraint: {value!r}",
            expected='a constraint such as "~> 0.1" or ">= 0.1.0, < 1.0.0"',
            file=file,
        )


def _evaluated(expr: Any, attr: hcl.Attribute, chk: diagnostics.Checker, value_of: Any, file: str | None) -> Any:
    try:
        return value_of(expr)
    except diagnostics.expressions.ExpressionError as exc:
        chk.diagnostics.append(exc.diagnostic(file or chk.filename))
        return None


def _required_providers(block: hcl.Block, chk: diagnostics.Checker, value_of: Any, file: str | None) -> None:
    for attr in block.attributes:
        value = _evaluated(attr.expr, attr, chk, value_of, file)
        if value is None:
            continue
        if isinstance(value, str):  # legacy form: velyrix = "~> 0.1"
            value = {"version": value}
        if not isinstance(value, dict):
            chk.error(
                attr.line,
                attr.column,
                f"provider requirement '{attr.name}' must be an object",
                expected='{ source = "velyrix/velyrix", version = "~> 0.1" }',
                file=file,
            )
            continue
        source = str(value.get("source", f"velyrix/{attr.name}" if attr.name == "velyrix" else attr.name))
        if attr.name != "velyrix" or source.lower() not in PROVIDER_SOURCES:
            chk.error(
                attr.line,
                attr.column,
                f"provider '{attr.name}' (source {source!r}) is not supported: Velyrix implements only its own",
                expected='velyrix = { source = "velyrix/velyrix" }',
                suggestion="velyrix/velyrix",
                file=file,
            )
            continue
        unknown = sorted(set(value) - {"source", "version", "configuration_aliases"})
        for key in unknown:
            chk.error(
                attr.line,
                attr.column,
                f"unknown key '{key}' in required_providers.{attr.name}",
                expected="source, version",
                file=file,
            )
        version = value.get("version")
        if version is None:
            continue
        ok = satisfies(PROVIDER_VERSION, str(version)) if isinstance(version, str) else None
        if ok is None:
            chk.error(
                attr.line,
                attr.column,
                f"version {version!r} is not a version constraint",
                expected='a constraint such as "~> 0.1"',
                file=file,
            )
        elif not ok:
            chk.error(
                attr.line,
                attr.column,
                f"the velyrix provider is version {PROVIDER_VERSION}, which does not satisfy {version!r}",
                expected=f'a constraint that {PROVIDER_VERSION} meets, e.g. "~> {PROVIDER_VERSION.rsplit(".", 1)[0]}"',
                file=file,
            )
    for inner in block.blocks:
        chk.error(
            inner.line,
            inner.column,
            f"unexpected block '{inner.type}' in required_providers",
            expected="name = { source = ..., version = ... }",
            file=file,
        )
