"""Evaluate HCL expressions of python-hcl2's parse tree by the rules of HCL's native syntax and the
Terraform language: literals, collections, references (``var.``, ``local.``, ``count.``, ``each.``,
resource attributes), operators, conditionals, ``for`` expressions, splats, index expressions,
function calls (``velyrix.declarations.functions``), string templates and heredocs.

Inputs: a lark node and a ``Scope``. Output: a plain value (str, int, float, bool, None, list, dict).
Errors are ``expressions.ExpressionError`` carrying line and column of the offending term.
"""

from __future__ import annotations

from typing import Any

from velyrix import errors
from velyrix.declarations import (
    expressions,
    hcl,
    operations,
    templates,
    typeexpr,
)
from velyrix.declarations import (
    references as references_mod,
)
from velyrix.declarations import (
    scope as scope_mod,
)
from velyrix.declarations.scope import Bound, JsonList, JsonObject, Literal, Namespace, Scope, attr_name

__all__ = ["Bound", "JsonList", "JsonObject", "Literal", "Namespace", "Scope", "evaluate", "references", "traversal"]

ExpressionError = expressions.ExpressionError
MISSING: Any = expressions._MISSING
_trees = scope_mod.trees
references = references_mod.references
traversal = references_mod.traversal
operate = operations.operate


def evaluate(node: Any, scope: Scope) -> Any:
    """Value of the expression ``node`` in ``scope``."""
    from lark import Token, Tree

    if isinstance(node, Bound):
        return evaluate(node.expr, node.scope)
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, templates.Template):
        return template_value(node, scope)
    if isinstance(node, JsonList):
        return [evaluate(x, scope) for x in node.items]
    if isinstance(node, JsonObject):
        return {k: evaluate(v, scope) for k, v in node.items.items()}
    if isinstance(node, Token):
        return expressions._token(node)
    if not isinstance(node, Tree):
        raise ExpressionError(1, 1, "missing value", expected="a value")
    handler = _HANDLERS.get(node.data)
    if handler is None:
        line, col = hcl._pos(node)
        raise ExpressionError(line, col, f"unsupported expression ({node.data.replace('_', ' ')})")
    return handler(node, scope)


def _expr_term(node: Any, scope: Scope) -> Any:
    kids = _trees(node)
    if len(kids) == 1:
        return evaluate(kids[0], scope)
    line, col = hcl._pos(node)
    raise ExpressionError(line, col, "missing value", expected="a value")


def _literal_value(node: Any, scope: Scope) -> Any:
    word = str(node.children[0])
    return {"true": True, "false": False, "null": None}.get(word, word)


def _tuple(node: Any, scope: Scope) -> list[Any]:
    return [evaluate(k, scope) for k in _trees(node)]


def _object(node: Any, scope: Scope) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for elem in _trees(node):
        parts = _trees(elem)
        key = _object_key(parts[0], scope)
        out[key] = evaluate(parts[-1], scope)
    return out


def _object_key(node: Any, scope: Scope) -> str:
    """An object key: a bare identifier is the key itself; ``(expr)`` or any other expression is evaluated."""
    from lark import Token, Tree

    inner = node
    while isinstance(inner, Tree) and inner.data in ("object_elem_key", "expr_term") and len(_trees(inner)) == 1:
        if inner.data == "expr_term" and any(isinstance(c, Token) and str(c) == "(" for c in inner.children):
            break
        inner = _trees(inner)[0]
    if isinstance(inner, Tree) and inner.data in ("identifier", "keyword"):
        return str(inner.children[0])
    if isinstance(inner, Tree) and inner.data == "object_elem_key":
        return str(inner.children[0])
    value = evaluate(inner, scope)
    line, col = hcl._pos(node)
    return str(typeexpr.convert(value, typeexpr.STRING, line, col))


def _identifier(node: Any, scope: Scope) -> Any:
    name = str(node.children[0])
    if name in scope.names:
        return scope.names[name]
    line, col = hcl._pos(node)
    if name in scope.roots:
        raise ExpressionError(line, col, f"'{name}' is a name space, not a value", expected=f"{name}.NAME")
    raise ExpressionError(
        line,
        col,
        f"bare name '{name}' is not a value",
        expected="a quoted string, a number, true/false, var.NAME, local.NAME or a bound name",
        suggestion=f'"{name}"',
    )


def _conditional(node: Any, scope: Scope) -> Any:
    cond, yes, no = _trees(node)
    line, col = hcl._pos(cond)
    value = typeexpr.convert(evaluate(cond, scope), typeexpr.BOOL, line, col, what="condition")
    if value is None:
        raise ExpressionError(line, col, "the condition is null", expected="true or false")
    return evaluate(yes if value else no, scope)


def _unary(node: Any, scope: Scope) -> Any:
    op = str(node.children[0]).strip()
    (operand,) = _trees(node)
    line, col = hcl._pos(node)
    value = evaluate(operand, scope)
    if op == "-":
        return -typeexpr.convert(value, typeexpr.NUMBER, line, col, what="operand of '-'")
    return not typeexpr.convert(value, typeexpr.BOOL, line, col, what="operand of '!'")


def _binary(node: Any, scope: Scope) -> Any:
    kids = _trees(node)
    if len(kids) == 1:
        return evaluate(kids[0], scope)
    term = kids[1]
    op_node = term.children[0]
    op = str(op_node.children[0] if hasattr(op_node, "children") else op_node).strip()
    left = evaluate(kids[0], scope)
    right = evaluate(_trees(term)[-1], scope)
    line, col = hcl._pos(node)
    return operate(op, left, right, line, col)


# --- references, indexes, splats -------------------------------------------------------------------


def _get_attr(node: Any, scope: Scope) -> Any:
    target, step = _trees(node)
    name = attr_name(step)
    line, col = hcl._pos(step)
    root = _root_name(target)
    if root is not None and root not in scope.names:
        if root not in scope.roots:
            raise _unknown_root(root, name, scope, *hcl._pos(target))
        return operations.member(scope.roots[root], name, line, col, root)
    return operations.member(evaluate(target, scope), name, line, col, None)


def _root_name(node: Any) -> str | None:
    """The identifier when ``node`` is a bare name (possibly inside expr_term)."""
    from lark import Tree

    while isinstance(node, Tree) and node.data == "expr_term" and len(_trees(node)) == 1:
        node = _trees(node)[0]
    if isinstance(node, Tree) and node.data == "identifier":
        return str(node.children[0])
    return None


def _unknown_root(root: str, name: str, scope: Scope, line: int, col: int) -> ExpressionError:
    if root in ("data", "module"):
        return ExpressionError(
            line, col, f"'{root}.{name}': {root} sources are not supported", expected="var., local. or velyrix_cluster."
        )
    near = errors.closest(root, [*scope.roots, *scope.names])
    return ExpressionError(
        line,
        col,
        f"unsupported reference '{root}.{name}'",
        expected="var.NAME, local.NAME, count.index, each.key/each.value or velyrix_cluster.NAME",
        suggestion=near[0] if near else None,
    )


def _index_expr(node: Any, scope: Scope) -> Any:
    target, idx = _trees(node)
    value = evaluate(target, scope)
    line, col = hcl._pos(idx)
    if idx.data == "short_index":
        key: Any = int(str([c for c in idx.children if str(c) != "."][0]))
    else:
        key = evaluate(_trees(idx)[0], scope)
    return operations.index(value, key, line, col)


def _splat(node: Any, scope: Scope) -> Any:
    target, splat = _trees(node)
    value = evaluate(target, scope)
    if isinstance(value, Namespace):
        value = [value.get(n, *hcl._pos(target)) for n in value.names()]
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    steps = _trees(splat)
    out = []
    for item in items:
        for step in steps:
            line, col = hcl._pos(step)
            if step.data == "get_attr":
                item = operations.member(item, attr_name(step), line, col, None)
            elif step.data == "short_index":
                item = operations.index(item, int(str([c for c in step.children if str(c) != "."][0])), line, col)
            else:
                item = operations.index(item, evaluate(_trees(step)[0], scope), line, col)
        out.append(item)
    return out


# --- for expressions and function calls ------------------------------------------------------------


def _for(node: Any, scope: Scope) -> Any:
    from lark import Token

    intro, *rest = _trees(node)
    names = [str(c.children[0]) for c in _trees(intro) if c.data == "identifier"]
    source_node = [c for c in _trees(intro) if c.data != "identifier"][0]
    line, col = hcl._pos(source_node)
    source = evaluate(source_node, scope)
    cond = rest[-1] if rest and rest[-1].data == "for_cond" else None
    bodies = [r for r in rest if r is not cond]
    if isinstance(source, dict):
        pairs: list[tuple[Any, Any]] = list(source.items())
    elif isinstance(source, list):
        pairs = list(enumerate(source))
    else:
        raise ExpressionError(
            line, col, f"a for expression cannot iterate over {typeexpr.show(source)}", "a list or a map"
        )
    grouping = any(isinstance(c, Token) and str(c) == "..." for c in node.children)
    is_object = node.data == "for_object_expr"
    out_list: list[Any] = []
    out_map: dict[str, Any] = {}
    for key, val in pairs:
        inner = scope.bind(**({names[0]: key, names[1]: val} if len(names) == 2 else {names[0]: val}))
        if cond is not None:
            cline, ccol = hcl._pos(cond)
            keep = typeexpr.convert(evaluate(_trees(cond)[0], inner), typeexpr.BOOL, cline, ccol, what="for condition")
            if not keep:
                continue
        if not is_object:
            out_list.append(evaluate(bodies[0], inner))
            continue
        kline, kcol = hcl._pos(bodies[0])
        k = str(typeexpr.convert(evaluate(bodies[0], inner), typeexpr.STRING, kline, kcol, what="for key"))
        v = evaluate(bodies[1], inner)
        if grouping:
            out_map.setdefault(k, []).append(v)
        elif k in out_map:
            raise ExpressionError(kline, kcol, f"duplicate key {k!r} in a for expression", expected="'...' to group")
        else:
            out_map[k] = v
    return out_map if is_object else out_list


def _call(node: Any, scope: Scope) -> Any:
    from lark import Token

    kids = _trees(node)
    names = [str(k.children[0]) for k in kids if k.data == "identifier"]
    line, col = hcl._pos(node)
    if len(names) > 1:
        raise ExpressionError(line, col, f"provider function '{'::'.join(names)}' is not supported")
    name = names[0]
    args_node = next((k for k in kids if k.data == "arguments"), None)
    arg_nodes = _trees(args_node) if args_node is not None else []
    if name in ("try", "can"):
        return _try_can(name, arg_nodes, scope, line, col)
    from velyrix.declarations import functions  # only configurations that call functions load the library

    spec = functions.FUNCTIONS.get(name)
    if spec is None:
        near = errors.closest(name, functions.FUNCTIONS)
        raise ExpressionError(
            line,
            col,
            f"unknown function '{name}'",
            expected="a function listed in docs/terraform-language.md",
            suggestion=near[0] if near else None,
        )
    args = [evaluate(a, scope) for a in arg_nodes]
    if args_node is not None and any(isinstance(c, Token) and str(c) == "..." for c in args_node.children):
        if not isinstance(args[-1], list):
            raise ExpressionError(line, col, f"'...' after the last argument of {name} needs a list")
        args = args[:-1] + list(args[-1])
    try:
        return functions.call(name, args, scope.base_dir)
    except typeexpr.FunctionError as exc:
        raise ExpressionError(line, col, f"{name}(): {exc}", expected=exc.expected) from None


def _try_can(name: str, arg_nodes: list[Any], scope: Scope, line: int, col: int) -> Any:
    if name == "can":
        if len(arg_nodes) != 1:
            raise ExpressionError(line, col, "can() takes exactly one argument")
        try:
            evaluate(arg_nodes[0], scope)
        except ExpressionError:
            return False
        return True
    if not arg_nodes:
        raise ExpressionError(line, col, "try() needs at least one argument")
    last: ExpressionError | None = None
    for arg in arg_nodes:
        try:
            return evaluate(arg, scope)
        except ExpressionError as exc:
            last = exc
    assert last is not None
    raise ExpressionError(last.line, last.column, f"no argument of try() could be evaluated: {last.message}")


# --- strings and templates -------------------------------------------------------------------------


def _string(node: Any, scope: Scope) -> Any:
    return template_value(templates.from_string_tree(node), scope)


def template_value(template: templates.Template, scope: Scope) -> Any:
    """A template's value: ``"${expr}"`` alone is the value of ``expr`` itself (HCL's rule), else text."""
    if len(template.parts) == 1 and isinstance(template.parts[0], templates.Interpolation):
        return evaluate(template.parts[0].expr, scope)
    return render(template, scope)


def _heredoc(node: Any, scope: Scope) -> str:
    line, col = hcl._pos(node)
    return render(templates.from_heredoc(str(node.children[0]), node.data.endswith("_trim"), line, col), scope)


def render(template: templates.Template, scope: Scope) -> str:
    """The text of a parsed template (literals, ``${...}`` interpolations, ``%{if}`` and ``%{for}``)."""
    out: list[str] = []
    for part in template.parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, templates.Interpolation):
            value = evaluate(part.expr, scope)
            out.append(str(typeexpr.convert(value, typeexpr.STRING, part.line, part.column, what="interpolation")))
        elif isinstance(part, templates.IfDirective):
            cond = typeexpr.convert(evaluate(part.cond, scope), typeexpr.BOOL, part.line, part.column, what="%{if}")
            out.append(render(part.then if cond else part.otherwise, scope))
        else:
            out.append(_render_for(part, scope))
    return "".join(out)


def _render_for(part: templates.ForDirective, scope: Scope) -> str:
    source = evaluate(part.source, scope)
    if isinstance(source, dict):
        pairs: list[tuple[Any, Any]] = list(source.items())
    elif isinstance(source, list):
        pairs = list(enumerate(source))
    else:
        raise ExpressionError(part.line, part.column, f"%{{for}} cannot iterate over {typeexpr.show(source)}")
    out = []
    for key, val in pairs:
        names = {part.names[0]: key, part.names[1]: val} if len(part.names) == 2 else {part.names[0]: val}
        out.append(render(part.body, scope.bind(**names)))
    return "".join(out)


_HANDLERS: dict[str, Any] = {
    "expr_term": _expr_term,
    "paren_expr": _expr_term,
    "int_lit": lambda n, s: int(str(n.children[0])),
    "float_lit": lambda n, s: typeexpr.parse_number_literal(str(n.children[0]), *hcl._pos(n)),
    "literal_value": _literal_value,
    "string": _string,
    "tuple": _tuple,
    "object": _object,
    "identifier": _identifier,
    "conditional": _conditional,
    "unary_op": _unary,
    "binary_op": _binary,
    "get_attr_expr_term": _get_attr,
    "index_expr_term": _index_expr,
    "attr_splat_expr_term": _splat,
    "full_splat_expr_term": _splat,
    "for_tuple_expr": _for,
    "for_object_expr": _for,
    "function_call": _call,
    "heredoc_template": _heredoc,
    "heredoc_template_trim": _heredoc,
}
