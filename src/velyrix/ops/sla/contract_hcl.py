"""Per-tenant SLA contracts written in HCL (``velyrix admin contract set TENANT FILE``)::

    contract "acme-gold" {
      availability_target_percent = 99.95
      measure                     = "node-minutes"
      maintenance_notice_days     = 7
      degraded_counts_as_down     = true
      credit {
        below_percent  = 99.95
        credit_percent = 10
      }
      response "P1" {
        first_response_min = 15
        update_every_min   = 30
      }
    }

Attributes left out take the catalog default's value; ``credit`` and ``response`` blocks, when given,
replace the default's. Every problem is reported at once with file:line:column and the closest valid
name (``errors.SpecError``); nothing is stored unless the whole file is valid.
"""

from __future__ import annotations

from typing import Any

from velyrix import errors
from velyrix.declarations import expressions, hcl
from velyrix.ops.sla import contracts

ATTRIBUTES: dict[str, str] = {
    "availability_target_percent": "a percentage such as 99.9",
    "measure": "one of " + ", ".join(f'"{m}"' for m in contracts.MEASURES),
    "maintenance_notice_days": "whole days, 0..365",
    "degraded_counts_as_down": "true or false",
    "escalation_policy": "a policy name of catalog/data/sla.toml",
}
BLOCKS: dict[str, dict[str, str]] = {
    "credit": {"below_percent": "a percentage", "credit_percent": "a percentage of the cluster's charge"},
    "response": {"first_response_min": "minutes", "update_every_min": "minutes"},
    "maintenance_window": {"days": 'e.g. ["sat", "sun"]', "start": '"HH:MM"', "hours": "1..24", "timezone": '"UTC"'},
}
MAX_BYTES = 64 * 1024


class _Diagnostics:
    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.items: list[errors.Diagnostic] = []

    def add(self, line: int, column: int, message: str, expected: str | None = None, near: str | None = None) -> None:
        self.items.append(errors.Diagnostic(self.filename, line, column, message, expected, near))


def _values(block: hcl.Block, allowed: dict[str, str], diag: _Diagnostics) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for attr in block.attributes:
        if attr.name not in allowed:
            near = errors.closest(attr.name, allowed)
            diag.add(attr.line, attr.column, f"unknown attribute '{attr.name}'", ", ".join(allowed), *near[:1])
            continue
        try:
            out[attr.name] = expressions.evaluate(attr.expr, {})
        except expressions.ExpressionError as exc:
            diag.items.append(exc.diagnostic(diag.filename))
    return out


def _body(block: hcl.Block, diag: _Diagnostics) -> dict[str, Any]:
    raw = _values(block, ATTRIBUTES, diag)
    credits: list[dict[str, Any]] = []
    response: dict[str, Any] = {}
    for child in block.blocks:
        if child.type not in BLOCKS:
            near = errors.closest(child.type, BLOCKS)
            diag.add(child.line, child.column, f"unknown block '{child.type}'", ", ".join(BLOCKS), *near[:1])
            continue
        values = _values(child, BLOCKS[child.type], diag)
        missing = [k for k in BLOCKS[child.type] if k not in values and k != "timezone"]
        if missing:
            diag.add(child.line, child.column, f"{child.type} block lacks {', '.join(missing)}")
        if child.type == "maintenance_window":
            raw["maintenance_window"] = {k: v for k, v in values.items()}
        elif child.type == "credit":
            credits.append(values)
        elif len(child.labels) != 1:
            diag.add(child.line, child.column, 'response needs one label, e.g. response "P1"', "P1, P2, P3 or P4")
        else:
            response[child.labels[0]] = values
    if credits:
        raw["credit"] = credits
    if response:
        raw["response"] = response
    return raw


def loads(text: str, filename: str = "contract.hcl") -> contracts.Contract:
    """The contract declared in ``text``; ``SpecError`` with every problem found."""
    if len(text.encode()) > MAX_BYTES:
        raise errors.SpecError([errors.Diagnostic(filename, 1, 1, f"contract file over {MAX_BYTES} bytes")])
    root = hcl.parse(text, filename)
    diag = _Diagnostics(filename)
    found = [b for b in root.blocks if b.type == "contract"]
    for other in root.blocks:
        if other.type != "contract":
            diag.add(other.line, other.column, f"unknown block '{other.type}'", 'contract "NAME" { ... }')
    for attr in root.attributes:
        diag.add(attr.line, attr.column, f"attribute '{attr.name}' outside a contract block")
    if len(found) != 1 or len(found[0].labels) != 1:
        diag.add(1, 1, 'a contract file holds exactly one contract "NAME" { ... } block')
        raise errors.SpecError(diag.items)
    block = found[0]
    raw = {**contracts.default().to_dict(), **_body(block, diag)}
    if diag.items:
        raise errors.SpecError(diag.items)
    try:
        return contracts.from_dict(block.labels[0], raw)
    except errors.VelyrixError as exc:
        near = getattr(exc, "suggestion", None)
        named = [a for a in block.attributes if a.name in exc.message or a.name.replace("_", " ") in exc.message]
        line, column = (named[0].line, named[0].column) if named else (block.line, block.column)
        diagnostic = errors.Diagnostic(filename, line, column, exc.message, exc.hint if not near else None, near)
        raise errors.SpecError([diagnostic]) from None
