"""Terraform's operators and value access on evaluated values: arithmetic (numeric strings convert),
comparison, logic, ``==`` by type, attribute and index access with the closest valid key in errors."""

from __future__ import annotations

from typing import Any

from velyrix import errors
from velyrix.declarations import expressions, scope, typeexpr

ExpressionError = expressions.ExpressionError
MISSING: Any = expressions._MISSING


def operate(op: str, left: Any, right: Any, line: int, col: int) -> Any:
    """``left op right`` by Terraform's rules (arithmetic converts numeric strings; ``==`` compares types)."""
    if op == "==":
        return typeexpr.equal(left, right)
    if op == "!=":
        return not typeexpr.equal(left, right)
    if op in ("&&", "||"):
        a = typeexpr.convert(left, typeexpr.BOOL, line, col, what=f"left operand of '{op}'")
        b = typeexpr.convert(right, typeexpr.BOOL, line, col, what=f"right operand of '{op}'")
        return (a and b) if op == "&&" else (a or b)
    try:
        a = typeexpr.convert(left, typeexpr.NUMBER, line, col, what=f"left operand of '{op}'")
        b = typeexpr.convert(right, typeexpr.NUMBER, line, col, what=f"right operand of '{op}'")
    except ExpressionError as exc:
        raise ExpressionError(
            line, col, f"unsupported operation {_show(left)} {op} {_show(right)}: {exc.message}", expected="numbers"
        ) from None
    if a is None or b is None:
        raise ExpressionError(line, col, f"unsupported operation with null: {_show(left)} {op} {_show(right)}")
    return _arith(op, a, b, line, col)


def _arith(op: str, a: float, b: float, line: int, col: int) -> Any:
    if op in ("<", ">", "<=", ">="):
        return {"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]
    if op in ("/", "%") and b == 0:
        raise ExpressionError(line, col, "division by zero")
    if op == "+":
        return typeexpr.number(a + b)
    if op == "-":
        return typeexpr.number(a - b)
    if op == "*":
        return typeexpr.number(a * b)
    if op == "/":
        return typeexpr.number(a / b)
    if op == "%":
        return typeexpr.number(a - b * int(a / b))  # Terraform's remainder keeps the sign of the dividend
    raise ExpressionError(line, col, f"unknown operator '{op}'")


def _show(value: Any) -> str:
    return typeexpr.show(value)


def member(value: Any, name: str, line: int, col: int, root: str | None) -> Any:
    if isinstance(value, scope.Namespace):
        return value.get(name, line, col)
    if isinstance(value, dict):
        if name not in value:
            near = errors.closest(name, value)
            where = f"'{root}'" if root else "the object"
            raise ExpressionError(
                line,
                col,
                f"{where} has no attribute '{name}'",
                expected="one of " + ", ".join(sorted(value)) if value else "an existing attribute",
                suggestion=near[0] if near else None,
            )
        found = value[name]
        if found is MISSING:
            raise ExpressionError(line, col, f"'{root}.{name}' has no value")
        return found
    if isinstance(value, list) and name.isdigit():
        return index(value, int(name), line, col)
    raise ExpressionError(line, col, f"cannot read attribute '{name}' of {_show(value)}", expected="an object or a map")


def index(value: Any, key: Any, line: int, col: int) -> Any:
    if isinstance(value, scope.Namespace):
        return value.get(str(key), line, col)
    if isinstance(value, list):
        n = typeexpr.convert(key, typeexpr.NUMBER, line, col, what="index")
        if not isinstance(n, int) or isinstance(n, bool):
            raise ExpressionError(line, col, f"index {_show(key)} is not a whole number", expected="0, 1, 2 ...")
        if not 0 <= n < len(value):
            raise ExpressionError(
                line, col, f"index {n} is out of range for a list of {len(value)}", expected=f"0..{len(value) - 1}"
            )
        return value[n]
    if isinstance(value, dict):
        k = str(typeexpr.convert(key, typeexpr.STRING, line, col, what="key"))
        if k not in value:
            near = errors.closest(k, value)
            raise ExpressionError(
                line,
                col,
                f"the map has no element {k!r}",
                expected="one of " + ", ".join(sorted(value)) if value else "a key of the map",
                suggestion=near[0] if near else None,
            )
        return value[k]
    raise ExpressionError(line, col, f"cannot index {_show(value)}", expected="a list or a map")
