"""References inside expressions without evaluating them: every ``root.a.b`` traversal (for
``depends_on`` and sensitivity) and bare traversals as written in ``depends_on`` / ``ignore_changes``."""

from __future__ import annotations

from typing import Any

from velyrix.declarations import hcl, templates
from velyrix.declarations.scope import Bound, attr_name
from velyrix.declarations.scope import trees as _trees


def references(node: Any) -> list[tuple[str, ...]]:
    """Every traversal ``root.a.b`` in ``node`` as a tuple of names (for ``depends_on`` and sensitivity)."""
    from lark import Tree

    out: list[tuple[str, ...]] = []
    if isinstance(node, Bound):
        return references(node.expr)
    if isinstance(node, templates.Template):
        return [r for e in templates.expressions_of(node) for r in references(e)]
    if not isinstance(node, Tree):
        return out
    if node.data == "get_attr_expr_term":
        chain = _chain(node)
        if chain:
            return [chain, *[r for c in _trees(node) for r in references(c)]]
    if node.data in ("heredoc_template", "heredoc_template_trim"):
        tpl = templates.from_heredoc(str(node.children[0]), node.data.endswith("_trim"), *hcl._pos(node))
        return references(tpl)
    for child in _trees(node):
        out.extend(references(child))
    return out


def _chain(node: Any) -> tuple[str, ...]:
    """``a.b.c`` as ``("a", "b", "c")``; empty when the chain does not start at a bare name."""
    from lark import Tree

    if isinstance(node, Tree) and node.data == "expr_term" and len(_trees(node)) == 1:
        return _chain(_trees(node)[0])
    if isinstance(node, Tree) and node.data == "identifier":
        return (str(node.children[0]),)
    if isinstance(node, Tree) and node.data in ("get_attr_expr_term", "index_expr_term"):
        target, step = _trees(node)
        head = _chain(target)
        if not head:
            return ()
        return (*head, attr_name(step)) if node.data == "get_attr_expr_term" else head
    return ()


def traversal(node: Any) -> tuple[str, ...]:
    """The names of a bare traversal expression (``velyrix_cluster.a``, ``node_count``), as written in
    ``depends_on`` and ``ignore_changes``; empty when ``node`` is not one."""
    return _chain(node)
