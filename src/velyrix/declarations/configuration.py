"""One Terraform configuration (a file or a directory of ``.tf``/``.tf.json`` files) evaluated by
Terraform's rules, up to the resource instances the loader type-checks:

- ``terraform {}`` checked (``velyrix.declarations.terraform``), variables with their values
  (``variables``), ``locals`` evaluated on demand (cycles reported);
- resources expanded by ``count`` / ``for_each`` into instances with ``count.index`` / ``each.key`` /
  ``each.value``, ``dynamic`` blocks expanded, ``lifecycle`` and ``depends_on`` read and checked;
- ``output`` values evaluated (a sensitive value needs ``sensitive = true``).

Input: the parsed root blocks and the variable sources. Output: a ``Configuration``; every problem
goes to the ``diagnostics.Checker``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from velyrix import errors
from velyrix.declarations import diagnostics, evaluation, expansion, hcl, models, schema, terraform, variables

SUPPORTED = ("terraform", "provider", "variable", "locals", "output", "resource")
UNSUPPORTED = {
    "module": "modules are not supported: declare the velyrix_cluster resources in this configuration",
    "data": "data sources are not supported: Velyrix reads nothing from other systems at plan time",
    "moved": "moved blocks are not supported: rename the resource and apply (it is destroyed and re-created)",
    "import": "import blocks are not supported: clusters are created by velyrix apply",
    "removed": "removed blocks are not supported: delete the resource block and apply to destroy it",
    "check": "check blocks are not supported",
}
OUTPUT_ATTRIBUTES = ("value", "description", "sensitive", "depends_on", "ephemeral")


@dataclass
class Configuration:
    """The evaluated configuration: its scope, resource instances, outputs and provider blocks."""

    scope: evaluation.Scope
    declared: dict[str, variables.Declared]
    values: dict[str, Any]
    instances: list[expansion.Instance] = field(default_factory=list)
    outputs: dict[str, models.OutputValue] = field(default_factory=dict)
    providers: list[hcl.Block] = field(default_factory=list)


class Locals(evaluation.Namespace):
    """``local.NAME``: each value evaluated once, when first referenced."""

    kind = "local value"

    def __init__(self, blocks: Sequence[hcl.Block], chk: diagnostics.Checker) -> None:
        self.attrs: dict[str, tuple[hcl.Attribute, str]] = {}
        self.values: dict[str, Any] = {}
        self.busy: set[str] = set()
        self.scope = evaluation.Scope()
        for block in blocks:
            if block.labels or block.blocks:
                chk.error(
                    block.line,
                    block.column,
                    "a locals block holds only name = value attributes",
                    expected="locals { name = value }",
                    file=block.file or None,
                )
            for attr in block.attributes:
                if attr.name in self.attrs:
                    chk.error(
                        attr.line, attr.column, f"local value '{attr.name}' is defined twice", file=block.file or None
                    )
                    continue
                self.attrs[attr.name] = (attr, block.file)

    def names(self) -> list[str]:
        return list(self.attrs)

    def get(self, name: str, line: int, column: int) -> Any:
        if name in self.values:
            return self.values[name]
        if name not in self.attrs:
            near = errors.closest(name, self.attrs)
            raise evaluation.ExpressionError(
                line,
                column,
                f"reference to undeclared local value 'local.{name}'",
                expected="a name defined in a locals block",
                suggestion=f"local.{near[0]}" if near else None,
            )
        if name in self.busy:
            raise evaluation.ExpressionError(
                line,
                column,
                f"local value '{name}' refers to itself (a cycle)",
                expected="locals that do not depend on each other in a circle",
            )
        self.busy.add(name)
        try:
            value = evaluation.evaluate(self.attrs[name][0].expr, self.scope)
        finally:
            self.busy.discard(name)
        self.values[name] = value
        return value


def build(
    roots: Sequence[hcl.Block],
    chk: diagnostics.Checker,
    *,
    base_dir: str,
    cli_vars: Mapping[str, str],
    var_files: Sequence[Path],
    env: Mapping[str, str],
) -> Configuration:
    """Evaluate the configuration made of ``roots`` (one per file)."""
    by_type: dict[str, list[hcl.Block]] = {t: [] for t in SUPPORTED}
    for root in roots:
        for attr in root.attributes:
            chk.error(
                attr.line,
                attr.column,
                f"unexpected attribute '{attr.name}' at the top level",
                expected="a block: " + ", ".join(schema.TOP_BLOCKS),
                file=root.file or None,
            )
        for block in root.blocks:
            if block.type in by_type:
                by_type[block.type].append(block)
            elif block.type in UNSUPPORTED:
                chk.error(
                    block.line,
                    block.column,
                    f"{block.type} block: {UNSUPPORTED[block.type]}",
                    expected="terraform, provider, variable, locals, output or resource blocks",
                    file=block.file or None,
                )
            else:
                chk.unknown(
                    block.line, block.column, "block type", block.type, schema.TOP_BLOCKS, file=block.file or None
                )
    terraform.check(by_type["terraform"], chk, lambda n: evaluation.evaluate(n, evaluation.Scope()))
    declared = variables.declare(by_type["variable"], chk)
    values = variables.assign(declared, chk, env=env, files=var_files, cli=cli_vars)
    variables.validate(declared, values, chk)
    locals_ = Locals(by_type["locals"], chk)
    roots_scope: dict[str, Any] = {
        "var": variables.Variables(values),
        "local": locals_,
        "path": {"module": base_dir, "root": base_dir, "cwd": os.getcwd()},
        "terraform": {"workspace": "default"},
    }
    scope = evaluation.Scope(roots_scope, base_dir=base_dir)
    locals_.scope = scope
    for name, (attr, file) in locals_.attrs.items():  # every local is checked, referenced or not
        try:
            locals_.get(name, attr.line, attr.column)
        except evaluation.ExpressionError as exc:
            chk.add(exc, file or None)
    config = Configuration(scope, declared, values, providers=by_type["provider"])
    table = expansion.Resources(by_type["resource"], scope, chk)
    for rtype in schema.RESOURCE_TYPES:
        roots_scope[rtype] = table.namespace(rtype)
    config.instances = table.instances()
    expansion.check_depends_on(config.instances, table, chk)
    sensitive = {n for n, v in declared.items() if v.sensitive}
    for inst in config.instances:
        inst.sensitive = tuple(
            [a.name for a in inst.block.attributes if _uses_sensitive(a.expr, sensitive, locals_, set())]
            + [
                b.type
                for b in inst.block.blocks
                if any(_uses_sensitive(a.expr, sensitive, locals_, set()) for a in b.attributes)
            ]
        )
    for block in by_type["output"]:
        _output(block, config, chk, sensitive, locals_)
    return config


def _output(
    block: hcl.Block, config: Configuration, chk: diagnostics.Checker, sensitive: set[str], locals_: Locals
) -> None:
    file = block.file or None
    if len(block.labels) != 1:
        chk.error(
            block.line,
            block.column,
            "an output block takes exactly one label",
            expected='output "NAME" { value = ... }',
            file=file,
        )
        return
    name = block.labels[0]
    if name in config.outputs:
        chk.error(block.line, block.column, f"output '{name}' is declared twice", file=file)
        return
    attrs = {a.name: a for a in block.attributes}
    for attr in block.attributes:
        if attr.name not in OUTPUT_ATTRIBUTES:
            chk.unknown(attr.line, attr.column, "attribute", attr.name, OUTPUT_ATTRIBUTES, f"in output '{name}'", file)
    for inner in block.blocks:
        if inner.type != "precondition":
            chk.unknown(inner.line, inner.column, "block", inner.type, ["precondition"], f"in output '{name}'", file)
    if "value" not in attrs:
        chk.error(block.line, block.column, f"output '{name}' has no value", expected="value = <expression>", file=file)
        return
    try:
        value = evaluation.evaluate(attrs["value"].expr, config.scope)
        marked = bool(evaluation.evaluate(attrs["sensitive"].expr, config.scope)) if "sensitive" in attrs else False
        description = (
            str(evaluation.evaluate(attrs["description"].expr, config.scope)) if "description" in attrs else ""
        )
    except evaluation.ExpressionError as exc:
        chk.add(exc, file)
        return
    if not marked and _uses_sensitive(attrs["value"].expr, sensitive, locals_, set()):
        attr = attrs["value"]
        chk.error(
            attr.line,
            attr.column,
            f"output '{name}' refers to sensitive values",
            expected="sensitive = true in the output block",
            file=file,
        )
        return
    config.outputs[name] = models.OutputValue(name, value, marked, description)


def _uses_sensitive(expr: Any, sensitive: set[str], locals_: Locals, seen: set[str]) -> bool:
    """Whether ``expr`` reads a sensitive variable, directly or through local values."""
    for ref in evaluation.references(expr):
        if len(ref) >= 2 and ref[0] == "var" and ref[1] in sensitive:
            return True
        if len(ref) >= 2 and ref[0] == "local" and ref[1] in locals_.attrs and ref[1] not in seen:
            seen.add(ref[1])
            if _uses_sensitive(locals_.attrs[ref[1]][0].expr, sensitive, locals_, seen):
                return True
    return False
