"""What names mean while evaluating HCL expressions (``Scope``), name spaces computed on demand
(``Namespace``), and the expression nodes that do not come from the HCL parser: ``Bound`` (an
expression with its own scope), ``Literal``, ``JsonList`` and ``JsonObject`` (``.tf.json`` values).
Also small helpers over python-hcl2's parse tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from velyrix.declarations import hcl


class Namespace:
    """A name space whose members are computed on demand (``local``, a resource type); subclasses
    implement ``get`` and ``names``."""

    kind = "name"

    def get(self, name: str, line: int, column: int) -> Any:
        raise NotImplementedError

    def names(self) -> list[str]:
        raise NotImplementedError


@dataclass
class Bound:
    """An expression that carries its own scope (the content of an expanded ``dynamic`` block)."""

    expr: Any
    scope: Scope


@dataclass
class Literal:
    """A value already known (a JSON number, bool or null of a ``.tf.json`` file), with its position."""

    value: Any
    line: int = 1
    column: int = 1


@dataclass
class JsonList:
    """A JSON array of a ``.tf.json`` file: a list of expression nodes."""

    items: list[Any]
    line: int = 1
    column: int = 1


@dataclass
class JsonObject:
    """A JSON object of a ``.tf.json`` file: keys to expression nodes."""

    items: dict[str, Any]
    line: int = 1
    column: int = 1


@dataclass
class Scope:
    """What names mean while evaluating: ``roots`` (``var``, ``local``, ``count``, ``each``, ``path``,
    resource types) and ``names`` bound by ``for`` expressions and ``dynamic`` iterators."""

    roots: dict[str, Any] = field(default_factory=dict)
    names: dict[str, Any] = field(default_factory=dict)
    base_dir: str = "."

    def bind(self, **names: Any) -> Scope:
        """A child scope with more bare names bound."""
        return Scope(self.roots, {**self.names, **names}, self.base_dir)

    def with_roots(self, **roots: Any) -> Scope:
        """A child scope with more roots (``count``, ``each``)."""
        return Scope({**self.roots, **roots}, dict(self.names), self.base_dir)


def trees(node: Any) -> list[Any]:
    from lark import Tree

    return [c for c in node.children if isinstance(c, Tree) and c.data != "new_line_or_comment"]


def attr_name(step: Any) -> str:
    """The name of a ``.name`` step (``get_attr``)."""
    from lark import Tree

    for child in step.children:
        if isinstance(child, Tree) and child.data in ("identifier", "literal_value"):
            return str(child.children[0])
    return hcl._identifier(step)
