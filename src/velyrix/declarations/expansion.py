"""Resource blocks to resource instances, by Terraform's meta-arguments: ``count`` (``count.index``),
``for_each`` (``each.key``, ``each.value``), ``dynamic`` blocks, ``lifecycle`` and ``depends_on``.

Input: the ``resource`` blocks and the module scope. Output: ``Instance`` objects whose ``block`` holds
only the resource's own arguments (meta-arguments removed, dynamic blocks expanded), and the
``velyrix_cluster`` name space that lets expressions read other resources' arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from velyrix import errors
from velyrix.declarations import diagnostics, evaluation, hcl, models, rules, schema, typeexpr

META_ATTRIBUTES = ("count", "for_each", "depends_on", "provider")
LIFECYCLE_ATTRIBUTES = ("prevent_destroy", "ignore_changes", "create_before_destroy", "replace_triggered_by")
OTHER_PROVIDERS = {"aws": "AWS", "google": "Google Cloud", "azurerm": "Azure", "kubernetes": "Kubernetes"}


@dataclass
class Instance:
    """One instance of a resource block: ``velyrix_cluster.x``, ``...x[0]`` or ``...x["key"]``."""

    type: str
    name: str
    key: int | str | None
    block: hcl.Block
    scope: evaluation.Scope
    lifecycle: models.Lifecycle = field(default_factory=models.Lifecycle)
    depends_on_nodes: list[tuple[Any, int, int]] = field(default_factory=list)
    sensitive: tuple[str, ...] = ()
    """Arguments (or nested block types) whose value derives from a sensitive variable."""

    @property
    def address(self) -> str:
        base = f"{self.type}.{self.name}"
        if self.key is None:
            return base
        return f"{base}[{self.key}]" if isinstance(self.key, int) else f"{base}[{json.dumps(self.key)}]"


_INSTANCE_INDEX = re.compile(rules.INSTANCE_INDEX_PATTERN + "$")
"""The index an instance keeps in its address (``rules.INSTANCE_INDEX_PATTERN``, as ``controlplane.specs``)."""


class _TypeNamespace(evaluation.Namespace):
    """``velyrix_cluster.NAME``: the declared arguments of a resource, evaluated when referenced
    (a list of objects with ``count``, a map with ``for_each``)."""

    kind = "resource"

    def __init__(self, table: Resources, rtype: str) -> None:
        self.table, self.rtype = table, rtype

    def names(self) -> list[str]:
        return [b.labels[1] for b in self.table.blocks if len(b.labels) == 2 and b.labels[0] == self.rtype]

    def get(self, name: str, line: int, column: int) -> Any:
        return self.table.value_of(self.rtype, name, line, column)


class Resources:
    """The resource blocks of a configuration and their instances."""

    def __init__(self, blocks: Sequence[hcl.Block], scope: evaluation.Scope, chk: diagnostics.Checker) -> None:
        self.blocks = list(blocks)
        self.scope, self.chk = scope, chk
        self._instances: dict[tuple[str, str], list[Instance]] = {}
        self._values: dict[tuple[str, str], Any] = {}
        self._busy: set[tuple[str, str]] = set()
        self._valid: list[hcl.Block] = []
        seen: dict[tuple[str, str], int] = {}
        for block in self.blocks:
            if self._check_block(block):
                key = (block.labels[0], block.labels[1])
                if key in seen:
                    chk.error(
                        block.line,
                        block.column,
                        f"resource {key[0]}.{key[1]} is declared twice (first on line {seen[key]})",
                        file=block.file or None,
                    )
                    continue
                seen[key] = block.line
                self._valid.append(block)

    def _check_block(self, block: hcl.Block) -> bool:
        file = block.file or None
        if len(block.labels) != 2:
            self.chk.error(
                block.line,
                block.column,
                "a resource block takes two labels",
                expected='resource "velyrix_cluster" "NAME"',
                file=file,
            )
            return False
        rtype = block.labels[0]
        if rtype not in schema.RESOURCE_TYPES:
            provider = rtype.split("_", 1)[0]
            if provider in OTHER_PROVIDERS or provider != "velyrix" and "_" in rtype:
                self.chk.error(
                    block.line,
                    block.column,
                    f"resource type '{rtype}' belongs to provider '{provider}', which Velyrix does not implement",
                    expected="one of " + ", ".join(schema.RESOURCE_TYPES),
                    file=file,
                )
            else:
                self.chk.unknown(block.line, block.column, "resource type", rtype, schema.RESOURCE_TYPES, file=file)
            return False
        rname = block.labels[1]
        # the API's body of a count/for_each instance names it by its address: ``pool[0]``, ``pool["a"]``
        base = _INSTANCE_INDEX.sub("", rname)
        label_issue = rules.text_problem(rname, 80) or rules.label_problem(base)
        if label_issue:
            shown = json.dumps(rname, ensure_ascii=False) if rname.isprintable() else json.dumps(rname)
            self.chk.error(
                block.line, block.column, f"resource label {shown} {label_issue}", expected="an identifier", file=file
            )
            return False
        return True

    def namespace(self, rtype: str) -> evaluation.Namespace:
        return _TypeNamespace(self, rtype)

    def instances(self) -> list[Instance]:
        """Every instance, in declaration order (each block expanded once)."""
        out: list[Instance] = []
        for block in self._valid:
            out.extend(self._expand(block))
        return out

    def _expand(self, block: hcl.Block) -> list[Instance]:
        key = (block.labels[0], block.labels[1])
        if key not in self._instances:
            self._instances[key] = []  # a reference to itself while expanding sees no instances
            try:
                self._instances[key] = _expand(block, self.scope, self.chk)
            except evaluation.ExpressionError as exc:
                self.chk.add(exc, block.file or None)
        return self._instances[key]

    def value_of(self, rtype: str, name: str, line: int, column: int) -> Any:
        """The value of ``rtype.name`` in expressions: an object (or a list / map of them)."""
        block = next((b for b in self._valid if b.labels == [rtype, name]), None)
        if block is None:
            near = errors.closest(name, [b.labels[1] for b in self._valid if b.labels[0] == rtype])
            raise evaluation.ExpressionError(
                line,
                column,
                f"reference to undeclared resource '{rtype}.{name}'",
                expected=f'a resource "{rtype}" block',
                suggestion=f"{rtype}.{near[0]}" if near else None,
            )
        key = (rtype, name)
        if key in self._values:
            return self._values[key]
        if key in self._busy:
            raise evaluation.ExpressionError(line, column, f"resource {rtype}.{name} refers to itself (a cycle)")
        self._busy.add(key)
        try:
            instances = self._expand(block)
            objects = [_object_of(i) for i in instances]
        finally:
            self._busy.discard(key)
        has_count = any(a.name == "count" for a in block.attributes)
        has_each = any(a.name == "for_each" for a in block.attributes)
        if has_each:
            value: Any = {str(i.key): o for i, o in zip(instances, objects, strict=True)}
        elif has_count:
            value = objects
        else:
            value = objects[0] if objects else None
        self._values[key] = value
        return value

    def has(self, rtype: str, name: str) -> bool:
        return any(b.labels == [rtype, name] for b in self._valid)


def _object_of(instance: Instance) -> dict[str, Any]:
    """A resource instance's declared arguments as an object (nested blocks as objects)."""
    out: dict[str, Any] = {}
    for attr in instance.block.attributes:
        out[attr.name] = evaluation.evaluate(attr.expr, instance.scope)
    for inner in instance.block.blocks:
        out[inner.type] = {a.name: evaluation.evaluate(a.expr, instance.scope) for a in inner.attributes}
    return out


def _expand(block: hcl.Block, scope: evaluation.Scope, chk: diagnostics.Checker) -> list[Instance]:
    attrs = {a.name: a for a in block.attributes}
    rtype, name = block.labels
    file = block.file or None
    if "count" in attrs and "for_each" in attrs:
        a = attrs["for_each"]
        chk.error(a.line, a.column, "count and for_each cannot both be set", expected="one of them", file=file)
        return []
    keys: list[tuple[int | str | None, evaluation.Scope]]
    if "count" in attrs:
        keys = _count(attrs["count"], scope)
    elif "for_each" in attrs:
        keys = _for_each(attrs["for_each"], scope)
    else:
        keys = [(None, scope)]
    out = []
    for key, inst_scope in keys:
        body = _strip_meta(block, inst_scope, chk)
        lifecycle, depends = _lifecycle(block, chk)
        out.append(Instance(rtype, name, key, body, inst_scope, lifecycle, depends))
    return out


def _count(attr: hcl.Attribute, scope: evaluation.Scope) -> list[tuple[int | str | None, evaluation.Scope]]:
    value = typeexpr.convert(evaluation.evaluate(attr.expr, scope), typeexpr.NUMBER, attr.line, attr.column, "count")
    if value is None or not isinstance(value, int) or value < 0:
        raise evaluation.ExpressionError(
            attr.line, attr.column, f"count must be a whole number >= 0, got {value!r}", expected="0, 1, 2 ..."
        )
    return [(i, scope.with_roots(count={"index": i})) for i in range(value)]


def _for_each(attr: hcl.Attribute, scope: evaluation.Scope) -> list[tuple[int | str | None, evaluation.Scope]]:
    value = evaluation.evaluate(attr.expr, scope)
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        if len(set(value)) != len(value):
            raise evaluation.ExpressionError(
                attr.line,
                attr.column,
                "for_each has duplicate elements",
                expected="a set of distinct strings (toset(...))",
            )
        pairs = [(v, v) for v in value]
    else:
        raise evaluation.ExpressionError(
            attr.line,
            attr.column,
            f"for_each needs a map or a set of strings, got {typeexpr.show(value)}",
            expected="a map or toset([...]) of strings",
        )
    return [(str(k), scope.with_roots(each={"key": str(k), "value": v})) for k, v in pairs]


def _strip_meta(block: hcl.Block, scope: evaluation.Scope, chk: diagnostics.Checker) -> hcl.Block:
    """A copy of ``block`` without meta-arguments and with its dynamic blocks expanded."""
    out = hcl.Block(block.type, list(block.labels), block.line, block.column, file=block.file)
    out.attributes = [a for a in block.attributes if a.name not in META_ATTRIBUTES]
    for inner in block.blocks:
        if inner.type == "lifecycle":
            continue
        if inner.type == "dynamic":
            out.blocks.extend(_dynamic(inner, scope, chk))
        else:
            out.blocks.append(_bind(inner, scope, chk))
    return out


def _bind(block: hcl.Block, scope: evaluation.Scope, chk: diagnostics.Checker) -> hcl.Block:
    out = hcl.Block(block.type, list(block.labels), block.line, block.column, file=block.file)
    out.attributes = [
        hcl.Attribute(a.name, evaluation.Bound(a.expr, scope), a.line, a.column) for a in block.attributes
    ]
    for inner in block.blocks:
        out.blocks.extend(_dynamic(inner, scope, chk) if inner.type == "dynamic" else [_bind(inner, scope, chk)])
    return out


def _dynamic(block: hcl.Block, scope: evaluation.Scope, chk: diagnostics.Checker) -> list[hcl.Block]:
    """``dynamic "TYPE" { for_each = ..., iterator = NAME, content { ... } }`` as concrete TYPE blocks."""
    file = block.file or None
    attrs = {a.name: a for a in block.attributes}
    content = [b for b in block.blocks if b.type == "content"]
    if len(block.labels) != 1 or "for_each" not in attrs or len(content) != 1:
        chk.error(
            block.line,
            block.column,
            "a dynamic block needs one label, for_each and one content block",
            expected='dynamic "storage" { for_each = ..., content { ... } }',
            file=file,
        )
        return []
    for a in block.attributes:
        if a.name not in ("for_each", "iterator", "labels"):
            chk.unknown(a.line, a.column, "attribute", a.name, ["for_each", "iterator", "labels"], "in dynamic", file)
    iterator = block.labels[0]
    if "iterator" in attrs:
        names = evaluation.traversal(attrs["iterator"].expr)
        if len(names) != 1:
            a = attrs["iterator"]
            chk.error(a.line, a.column, "iterator must be a bare name", expected="iterator = item", file=file)
            return []
        iterator = names[0]
    try:
        source = evaluation.evaluate(attrs["for_each"].expr, scope)
    except evaluation.ExpressionError as exc:
        chk.add(exc, file)
        return []
    if isinstance(source, dict):
        pairs: list[tuple[Any, Any]] = list(source.items())
    elif isinstance(source, list):
        pairs = list(enumerate(source)) if not all(isinstance(v, str) for v in source) else [(v, v) for v in source]
    else:
        a = attrs["for_each"]
        chk.error(a.line, a.column, f"dynamic for_each needs a list or a map, got {typeexpr.show(source)}", file=file)
        return []
    out = []
    for key, value in pairs:
        inner = scope.bind(**{iterator: {"key": key, "value": value}})
        expanded = _bind(content[0], inner, chk)
        expanded.type, expanded.line, expanded.column = block.labels[0], block.line, block.column
        out.append(expanded)
    return out


def _lifecycle(block: hcl.Block, chk: diagnostics.Checker) -> tuple[models.Lifecycle, list[tuple[Any, int, int]]]:
    file = block.file or None
    flags: dict[str, bool] = {}
    ignore: list[str] = []
    for inner in [b for b in block.blocks if b.type == "lifecycle"]:
        for attr in inner.attributes:
            if attr.name not in LIFECYCLE_ATTRIBUTES:
                chk.unknown(attr.line, attr.column, "argument", attr.name, LIFECYCLE_ATTRIBUTES, "in lifecycle", file)
            elif attr.name in ("prevent_destroy", "create_before_destroy"):
                flags[attr.name] = _constant_bool(attr, chk, file)
            elif attr.name == "ignore_changes":
                ignore = _ignore_changes(attr, chk, file)
        for sub in inner.blocks:
            if sub.type not in ("precondition", "postcondition"):
                chk.unknown(
                    sub.line, sub.column, "block", sub.type, ["precondition", "postcondition"], "in lifecycle", file
                )
    depends: list[tuple[Any, int, int]] = []
    for attr in block.attributes:
        if attr.name == "depends_on":
            depends = [(node, *_pos(node, attr)) for node in _list_items(attr.expr)]
    return models.Lifecycle(
        prevent_destroy=flags.get("prevent_destroy", False),
        ignore_changes=tuple(ignore),
        create_before_destroy=flags.get("create_before_destroy", False),
    ), depends


def _pos(node: Any, attr: hcl.Attribute) -> tuple[int, int]:
    line, col = hcl._pos(node)
    return (line, col) if line > 1 or col > 1 else (attr.line, attr.column)


def _list_items(expr: Any) -> list[Any]:
    """The element expressions of a list written in the file (``[a, b]``)."""
    from lark import Tree

    if isinstance(expr, evaluation.JsonList):
        return list(expr.items)
    node = expr
    while isinstance(node, Tree) and node.data == "expr_term" and len(evaluation._trees(node)) == 1:
        node = evaluation._trees(node)[0]
    if isinstance(node, Tree) and node.data == "tuple":
        return evaluation._trees(node)
    return [expr]


def _constant_bool(attr: hcl.Attribute, chk: diagnostics.Checker, file: str | None) -> bool:
    try:
        value = evaluation.evaluate(attr.expr, evaluation.Scope())
    except evaluation.ExpressionError:
        value = None
    if not isinstance(value, bool):
        chk.error(
            attr.line,
            attr.column,
            f"{attr.name} must be the literal true or false",
            expected="true or false (lifecycle arguments cannot use variables)",
            file=file,
        )
        return False
    return value


def _ignore_changes(attr: hcl.Attribute, chk: diagnostics.Checker, file: str | None) -> list[str]:
    names = evaluation.traversal(attr.expr)
    if names == ("all",):
        return ["all"]
    valid = [*schema.CLUSTER, *schema.CLUSTER_BLOCKS]
    out = []
    for node in _list_items(attr.expr):
        path = evaluation.traversal(node)
        line, col = _pos(node, attr)
        if not path or path[0] not in valid or len(path) > 2:
            chk.unknown(line, col, "attribute in ignore_changes", ".".join(path) or "?", valid, file=file)
            continue
        out.append(path[0])
    return out


def check_depends_on(instances: Sequence[Instance], table: Resources, chk: diagnostics.Checker) -> None:
    """``depends_on`` entries must name declared resources; records them on each instance."""
    for inst in instances:
        found: list[str] = []
        for node, line, col in inst.depends_on_nodes:
            path = evaluation.traversal(node)
            file = inst.block.file or None
            if len(path) != 2 or path[0] not in schema.RESOURCE_TYPES:
                chk.error(
                    line,
                    col,
                    "depends_on takes resource references such as velyrix_cluster.NAME",
                    expected="velyrix_cluster.NAME",
                    file=file,
                )
            elif not table.has(*path):
                near = errors.closest(path[1], table.namespace(path[0]).names())
                chk.error(
                    line,
                    col,
                    f"depends_on refers to undeclared resource {'.'.join(path)}",
                    expected="a declared resource",
                    suggestion=f"{path[0]}.{near[0]}" if near else None,
                    file=file,
                )
            else:
                found.append(".".join(path))
        inst.lifecycle = models.Lifecycle(**{**inst.lifecycle.__dict__, "depends_on": tuple(found)})
