"""Evaluate HCL expressions of the parse tree: literals, lists, maps, ``var.NAME`` references,
string interpolation and simple arithmetic. Anything else is reported, not guessed."""

from __future__ import annotations

import operator
import re
from typing import Any

from velyrix import errors
from velyrix.declarations import hcl


class ExpressionError(Exception):
    """An expression that cannot be evaluated; carries its position."""

    def __init__(
        self, line: int, column: int, message: str, expected: str | None = None, suggestion: str | None = None
    ) -> None:
        super().__init__(message)
        self.line, self.column, self.message = line, column, message
        self.expected, self.suggestion = expected, suggestion

    def diagnostic(self, filename: str) -> errors.Diagnostic:
        return errors.Diagnostic(filename, self.line, self.column, self.message, self.expected, self.suggestion)


_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "%": operator.mod}


def evaluate(node: Any, variables: dict[str, Any]) -> Any:
    """Value of the expression ``node`` given declared ``variables`` (name → value)."""
    from lark import Token, Tree

    if isinstance(node, Token):
        return _token(node)
    if not isinstance(node, Tree):
        raise ExpressionError(1, 1, "missing value", expected="a value")
    line, col = hcl._pos(node)
    kind = node.data
    kids = [c for c in node.children if isinstance(c, Tree)]
    if kind in ("expr_term", "paren_expr") or (kind == "binary_op" and len(kids) == 1):
        if len(kids) == 1:
            return evaluate(kids[0], variables)
        toks = [c for c in node.children if isinstance(c, Token) and str(c).strip() not in ("(", ")")]
        if len(kids) == 0 and toks:
            return _token(toks[0])
    if kind == "int_lit":
        return int(str(node.children[0]))
    if kind == "float_lit":
        return float(str(node.children[0]))
    if kind == "literal_value":
        word = str(node.children[0])
        return {"true": True, "false": False, "null": None}.get(word, word)
    if kind == "string":
        return _string(node, variables)
    if kind == "tuple":
        return [evaluate(k, variables) for k in kids]
    if kind == "object":
        out: dict[str, Any] = {}
        for elem in kids:
            parts = [c for c in elem.children if isinstance(c, Tree)]
            key_node = parts[0]
            key = _object_key(key_node, variables)
            out[key] = evaluate(parts[-1], variables)
        return out
    if kind == "identifier":
        name = str(node.children[0])
        raise ExpressionError(
            line,
            col,
            f"bare name '{name}' is not a value",
            expected="a quoted string, a number, true/false or var.NAME",
            suggestion=f'"{name}"',
        )
    if kind == "get_attr_expr_term":
        return _reference(node, variables)
    if kind == "unary_op":
        op = str(node.children[0]).strip()
        value = evaluate(kids[0], variables)
        if op == "-" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value
        if op == "!" and isinstance(value, bool):
            return not value
        raise ExpressionError(line, col, f"operator '{op}' cannot apply to {value!r}")
    if kind == "binary_op":
        left = evaluate(kids[0], variables)
        term = kids[1]
        op = str(term.children[0].children[0]) if isinstance(term.children[0], Tree) else str(term.children[0])
        right = evaluate([c for c in term.children if isinstance(c, Tree)][-1], variables)
        fn = _BINARY.get(op.strip())
        if fn is None or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right)):
            raise ExpressionError(
                line,
                col,
                f"unsupported operation {left!r} {op.strip()} {right!r}",
                expected="arithmetic on numbers (+ - * / %)",
            )
        try:
            return fn(left, right)
        except ZeroDivisionError:
            raise ExpressionError(line, col, "division by zero") from None
    raise ExpressionError(
        line,
        col,
        f"unsupported expression ({kind.replace('_', ' ')})",
        expected="a literal, a list, a map, var.NAME or simple arithmetic",
    )


def _token(tok: Any) -> Any:
    text = str(tok)
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _object_key(node: Any, variables: dict[str, Any]) -> str:
    from lark import Tree

    inner = node
    while (
        isinstance(inner, Tree)
        and inner.data in ("object_elem_key", "expr_term")
        and len([c for c in inner.children if isinstance(c, Tree)]) == 1
    ):
        inner = [c for c in inner.children if isinstance(c, Tree)][0]
    if isinstance(inner, Tree) and inner.data == "identifier":
        return str(inner.children[0])
    return str(evaluate(inner, variables))


def _reference(node: Any, variables: dict[str, Any]) -> Any:
    from lark import Tree

    line, col = hcl._pos(node)
    parts: list[str] = []

    def walk(n: Any) -> None:
        if isinstance(n, Tree) and n.data == "identifier":
            parts.append(str(n.children[0]))
            return
        if isinstance(n, Tree):
            for c in n.children:
                walk(c)

    walk(node)
    if len(parts) == 2 and parts[0] == "var":
        name = parts[1]
        if name not in variables:
            suggestion = errors.closest(name, variables)
            raise ExpressionError(
                line,
                col,
                f"reference to undeclared variable 'var.{name}'",
                expected="a variable declared in a variable block",
                suggestion=f"var.{suggestion[0]}" if suggestion else None,
            )
        value = variables[name]
        if value is _MISSING:
            raise ExpressionError(
                line,
                col,
                f"variable '{name}' has no value",
                expected=f"a default in its variable block, -var {name}=VALUE or a -var-file",
            )
        return value
    raise ExpressionError(line, col, f"unsupported reference '{'.'.join(parts)}'", expected="var.NAME")


def _string(node: Any, variables: dict[str, Any]) -> str:
    from lark import Token, Tree

    out: list[str] = []
    for part in node.children:
        if not isinstance(part, Tree) or part.data != "string_part":
            continue
        for piece in part.children:
            if isinstance(piece, Token):
                out.append(_unescape(str(piece)))
            elif isinstance(piece, Tree) and piece.data == "interpolation":
                inner = [c for c in piece.children if isinstance(c, Tree)]
                value = evaluate(inner[0], variables) if inner else ""
                if isinstance(value, bool):
                    value = "true" if value else "false"
                elif isinstance(value, float) and value.is_integer():
                    value = int(value)
                out.append(str(value))
            else:
                line, col = hcl._pos(piece)
                raise ExpressionError(line, col, "unsupported template directive", expected="${...} interpolation")
    return "".join(out)


_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))|(\$\$\{)|(%%\{)", re.DOTALL)
_SIMPLE = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _unescape(text: str) -> str:
    """HCL's escapes in a quoted string (hclsyntax spec, "Template Literals"): ``\\n \\r \\t \\" \\\\``,
    ``\\uNNNN``, ``\\UNNNNNNNN``, and ``$${`` / ``%%{`` for a literal ``${`` / ``%{``."""

    def one(m: re.Match[str]) -> str:
        short, long, simple, dollar, percent = m.groups()
        if dollar:
            return "${"
        if percent:
            return "%{"
        if short or long:
            code = int(short or long, 16)
            return chr(code) if code <= 0x10FFFF else m.group()
        return _SIMPLE.get(simple, m.group())

    return _ESCAPE.sub(one, text)


class _Missing:
    def __repr__(self) -> str:
        return "<no value>"


_MISSING: Any = _Missing()
"""Value of a declared variable that has neither a default nor a value from -var / -var-file."""
