"""Terraform's type constraints and its automatic conversions.

Types: ``"string"``, ``"number"``, ``"bool"``, ``"any"``, ``("list", T)``, ``("set", T)``, ``("map", T)``,
``("tuple", [T, ...])`` and ``("object", {name: Attr})``. ``convert`` applies Terraform's rules: a number
given as ``"64"`` becomes 64, ``true`` becomes ``"true"`` where a string is wanted, object attributes
marked ``optional()`` take their default. Values are plain Python data; numbers that are whole are ints.
"""

from __future__ import annotations

import json
import math
from typing import Any

from velyrix import errors
from velyrix.declarations import expressions, hcl
from velyrix.frozen import frozen

STRING, NUMBER, BOOL, ANY = "string", "number", "bool", "any"
PRIMITIVES = (STRING, NUMBER, BOOL, ANY)
COLLECTIONS = ("list", "set", "map")
CONSTRUCTORS = ("list", "set", "map", "tuple", "object", "optional")


@frozen
class Attr:
    """An attribute of an object type; ``optional`` ones take ``default`` (None: null) when absent."""

    type: Any
    optional: bool = False
    default: Any = None


def _err(line: int, col: int, message: str, expected: str | None = None) -> expressions.ExpressionError:
    return expressions.ExpressionError(line, col, message, expected=expected)


def number(value: float) -> int | float:
    """A computed number, whole numbers as ints (Terraform numbers have no int/float split)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def parse_number_literal(text: str, line: int = 1, col: int = 1) -> int | float:
    """A float literal such as ``405e9``; out-of-range literals (``1e309``) are errors."""
    value = float(text)
    if math.isinf(value) or math.isnan(value):
        raise _err(line, col, f"number {text} is out of range", expected="a finite number (at most about 1.8e308)")
    return number(value)


def show(value: Any) -> str:
    """``value`` written as HCL for messages (strings quoted, maps as ``{ k = v }``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value[:8]) + (", ..." if len(value) > 8 else "") + "]"
    if isinstance(value, dict):
        items = list(value.items())[:8]
        return "{" + ", ".join(f"{k} = {show(v)}" for k, v in items) + (", ..." if len(value) > 8 else "") + "}"
    return to_string(value)


def to_string(value: Any) -> str:
    """Terraform's string form of a primitive value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(number(value)) if value.is_integer() else repr(value)
    return str(value)


def describe(t: Any) -> str:
    """A type as written in Terraform (``list(string)``)."""
    if isinstance(t, str):
        return t
    kind, inner = t
    if kind == "tuple":
        return "tuple([" + ", ".join(describe(x) for x in inner) + "])"
    if kind == "object":
        return "object({" + ", ".join(f"{k} = {describe(a.type)}" for k, a in inner.items()) + "})"
    return f"{kind}({describe(inner)})"


def kind_of(value: Any) -> str:
    """The Terraform type name of a value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "map"


def convert(value: Any, t: Any, line: int = 1, col: int = 1, what: str = "value") -> Any:
    """``value`` converted to type ``t`` by Terraform's rules; raises ``ExpressionError`` when impossible."""
    if value is None or t == ANY:
        return value
    if t == STRING:
        if isinstance(value, (str, bool, int, float)):
            return to_string(value)
        raise _err(line, col, f"{what}: a string is required, got {kind_of(value)} {show(value)}", "a string")
    if t == NUMBER:
        return _to_number(value, line, col, what)
    if t == BOOL:
        if isinstance(value, bool):
            return value
        if value in ("true", "false"):
            return value == "true"
        raise _err(line, col, f"{what}: a bool is required, got {kind_of(value)} {show(value)}", "true or false")
    return _convert_structural(value, t, line, col, what)


def _to_number(value: Any, line: int, col: int, what: str) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            parsed = float(text)
        except ValueError:
            parsed = math.nan
        if math.isfinite(parsed) and text.lower() not in ("inf", "nan", "infinity"):
            return number(parsed)
    raise _err(line, col, f"{what}: a number is required, got {kind_of(value)} {show(value)}", "a number")


def _convert_structural(value: Any, t: Any, line: int, col: int, what: str) -> Any:
    kind, inner = t
    if kind in ("list", "set"):
        if not isinstance(value, list):
            raise _err(line, col, f"{what}: a {kind} is required, got {kind_of(value)}", describe(t))
        out = [convert(v, inner, line, col, f"{what}[{i}]") for i, v in enumerate(value)]
        if kind == "set":
            out = _distinct(out)
        return out
    if kind == "tuple":
        if not isinstance(value, list) or len(value) != len(inner):
            raise _err(line, col, f"{what}: a tuple of {len(inner)} elements is required", describe(t))
        return [convert(v, it, line, col, f"{what}[{i}]") for i, (v, it) in enumerate(zip(value, inner, strict=True))]
    if not isinstance(value, dict):
        raise _err(line, col, f"{what}: a {kind} is required, got {kind_of(value)}", describe(t))
    if kind == "map":
        return {k: convert(v, inner, line, col, f"{what}[{k!r}]") for k, v in value.items()}
    out_obj: dict[str, Any] = {}
    for name, attr in inner.items():
        if name in value:
            out_obj[name] = convert(value[name], attr.type, line, col, f"{what}.{name}")
        elif attr.optional:
            out_obj[name] = convert(attr.default, attr.type, line, col, f"{what}.{name}")
        else:
            raise _err(line, col, f"{what}: attribute '{name}' is required", describe(t))
    return out_obj


def _distinct(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if not any(equal(item, seen) for seen in out):
            out.append(item)
    return out


def equal(a: Any, b: Any) -> bool:
    """Terraform's ``==``: values of different types are never equal (``1 == "1"`` is false)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    return bool(a == b)


# --- type constraint expressions -------------------------------------------------------------------


def parse(node: Any, evaluate_default: Any = None) -> Any:
    """The type written in a variable's ``type = ...`` (``object({a = optional(number, 1)})``).

    ``evaluate_default`` evaluates the default expression of ``optional(T, default)``.
    """
    from lark import Tree

    line, col = hcl._pos(node)
    while isinstance(node, Tree) and node.data == "expr_term" and len(_kids(node)) == 1:
        node = _kids(node)[0]
    if isinstance(node, Tree) and node.data == "identifier":
        name = str(node.children[0])
        if name in PRIMITIVES:
            return name
        if name in COLLECTIONS:
            return (name, ANY)
        raise _unknown_type(name, line, col)
    if isinstance(node, Tree) and node.data == "string":  # legacy "string" / "list" / "map"
        word = "".join(str(p.children[0]) for p in _kids(node) if p.children)
        return (
            word if word in PRIMITIVES else (word, ANY) if word in ("list", "map") else _raise_unknown(word, line, col)
        )
    if isinstance(node, Tree) and node.data == "function_call":
        return _constructor(node, evaluate_default, line, col)
    raise _err(line, col, "not a type", expected="string, number, bool, any, list(T), map(T), set(T), object({...})")


def _raise_unknown(name: str, line: int, col: int) -> Any:
    raise _unknown_type(name, line, col)


def _unknown_type(name: str, line: int, col: int) -> expressions.ExpressionError:
    near = errors.closest(name, [*PRIMITIVES, *CONSTRUCTORS])
    return expressions.ExpressionError(
        line,
        col,
        f"unknown variable type '{name}'",
        expected="one of " + ", ".join([*PRIMITIVES, *CONSTRUCTORS]),
        suggestion=near[0] if near else None,
    )


def _kids(node: Any) -> list[Any]:
    from lark import Tree

    return [c for c in node.children if isinstance(c, Tree) and c.data != "new_line_or_comment"]


def _constructor(node: Any, evaluate_default: Any, line: int, col: int) -> Any:
    kids = _kids(node)
    name = str(kids[0].children[0])
    args = _kids(kids[1]) if len(kids) > 1 else []
    if name in ("list", "set", "map"):
        if len(args) != 1:
            raise _err(line, col, f"{name}() takes one element type", expected=f"{name}(string)")
        return (name, parse(args[0], evaluate_default))
    if name == "tuple":
        elems = _unwrap(args[0], "tuple") if args else None
        if elems is None:
            raise _err(line, col, "tuple() takes a list of types", expected="tuple([string, number])")
        return ("tuple", [parse(e, evaluate_default) for e in _kids(elems)])
    if name == "object":
        obj = _unwrap(args[0], "object") if args else None
        if obj is None:
            raise _err(line, col, "object() takes a map of attribute types", expected="object({ name = string })")
        return ("object", _object_attrs(obj, evaluate_default))
    if name == "optional":
        raise _err(line, col, "optional() is only allowed for an attribute of object()")
    raise _unknown_type(name, line, col)


def _unwrap(node: Any, data: str) -> Any:
    from lark import Tree

    while isinstance(node, Tree) and node.data == "expr_term" and len(_kids(node)) == 1:
        node = _kids(node)[0]
    return node if isinstance(node, Tree) and node.data == data else None


def _object_attrs(obj: Any, evaluate_default: Any) -> dict[str, Attr]:
    out: dict[str, Attr] = {}
    for elem in _kids(obj):
        key_node, value_node = _kids(elem)[0], _kids(elem)[-1]
        key = hcl._identifier(key_node)
        inner = _unwrap(value_node, "function_call")
        if inner is not None and str(_kids(inner)[0].children[0]) == "optional":
            args = _kids(_kids(inner)[1]) if len(_kids(inner)) > 1 else []
            if not args or len(args) > 2:
                line, col = hcl._pos(inner)
                raise _err(line, col, "optional() takes a type and an optional default", "optional(number, 1)")
            attr_type = parse(args[0], evaluate_default)
            default = evaluate_default(args[1]) if len(args) == 2 and evaluate_default else None
            if default is not None:
                line, col = hcl._pos(args[1])
                default = convert(default, attr_type, line, col, f"default of {key}")
            out[key] = Attr(attr_type, optional=True, default=default)
        else:
            out[key] = Attr(parse(value_node, evaluate_default))
    return out


class FunctionError(Exception):
    """A function called with arguments it cannot take; ``expected`` says what it wants."""

    def __init__(self, message: str, expected: str | None = None) -> None:
        super().__init__(message)
        self.expected = expected
