"""Input variables as Terraform defines them: ``variable`` blocks (type constraint, default,
``sensitive``, ``nullable``, ``validation``) and their values from, lowest precedence first,
``TF_VAR_name`` environment variables, ``terraform.tfvars``, ``terraform.tfvars.json``,
``*.auto.tfvars(.json)`` in lexical order, ``-var-file`` files and ``-var`` flags.

Inputs: the variable blocks, the value sources. Output: ``Declared`` per name and the final values
(``MISSING`` where no value was given); problems go to the ``diagnostics.Checker``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from velyrix import errors
from velyrix.declarations import diagnostics, evaluation, hcl, typeexpr

CLI = "<command line>"
ENV = "<environment>"
ATTRIBUTES = ("default", "type", "description", "sensitive", "nullable")
RESERVED = ("source", "version", "providers", "count", "for_each", "lifecycle", "depends_on", "locals")


@dataclass
class Declared:
    """One ``variable "NAME"`` block."""

    name: str
    block: hcl.Block
    type: Any = typeexpr.ANY
    typed: bool = False
    default: Any = evaluation.MISSING
    sensitive: bool = False
    nullable: bool = True
    validations: list[hcl.Block] = field(default_factory=list)


def declare(blocks: Sequence[hcl.Block], chk: diagnostics.Checker) -> dict[str, Declared]:
    """The declared variables; malformed blocks are reported and skipped."""
    declared: dict[str, Declared] = {}
    constant = evaluation.Scope()
    for block in blocks:
        file = block.file or None
        if len(block.labels) != 1:
            chk.error(
                block.line,
                block.column,
                "a variable block takes exactly one label",
                expected='variable "NAME" { ... }',
                file=file,
            )
            continue
        name = block.labels[0]
        if name in declared:
            chk.error(block.line, block.column, f"variable '{name}' is declared twice", file=file)
            continue
        if name in RESERVED:
            chk.error(block.line, block.column, f"'{name}' is a reserved name, not a variable name", file=file)
            continue
        var = Declared(name, block)
        for attr in block.attributes:
            try:
                _attribute(var, attr, chk, constant, file)
            except evaluation.ExpressionError as exc:
                chk.add(exc, file)
        for inner in block.blocks:
            if inner.type == "validation":
                var.validations.append(inner)
            else:
                chk.unknown(
                    inner.line, inner.column, "block", inner.type, ["validation"], f"in variable '{name}'", file
                )
        if var.default is not evaluation.MISSING and var.typed:
            try:
                var.default = typeexpr.convert(var.default, var.type, block.line, block.column, f"default of '{name}'")
            except evaluation.ExpressionError as exc:
                chk.error(
                    exc.line,
                    exc.column,
                    f"default of variable '{name}' is not a {typeexpr.describe(var.type)}: {exc.message}",
                    expected=typeexpr.describe(var.type),
                    file=file,
                )
        declared[name] = var
    return declared


def _attribute(var: Declared, attr: hcl.Attribute, chk: diagnostics.Checker, scope: Any, file: str | None) -> None:
    if attr.name not in ATTRIBUTES:
        chk.unknown(attr.line, attr.column, "attribute", attr.name, ATTRIBUTES, f"in variable '{var.name}'", file)
    elif attr.name == "type":
        var.type = typeexpr.parse(attr.expr, lambda n: evaluation.evaluate(n, scope))
        var.typed = True
    elif attr.name == "default":
        var.default = evaluation.evaluate(attr.expr, scope)
    elif attr.name in ("sensitive", "nullable"):
        value = evaluation.evaluate(attr.expr, scope)
        if not isinstance(value, bool):
            chk.error(
                attr.line,
                attr.column,
                f"'{attr.name}' must be true or false, got {typeexpr.show(value)}",
                expected="true or false",
                file=file,
            )
        else:
            setattr(var, attr.name, value)
    else:
        evaluation.evaluate(attr.expr, scope)


class Variables(evaluation.Namespace):
    """``var.NAME``: the value of a declared variable; undeclared names and missing values are errors."""

    kind = "variable"

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def names(self) -> list[str]:
        return list(self.values)

    def get(self, name: str, line: int, column: int) -> Any:
        if name not in self.values:
            near = errors.closest(name, self.values)
            raise evaluation.ExpressionError(
                line,
                column,
                f"reference to undeclared variable 'var.{name}'",
                expected="a variable declared in a variable block",
                suggestion=f"var.{near[0]}" if near else None,
            )
        value = self.values[name]
        if value is evaluation.MISSING:
            raise evaluation.ExpressionError(
                line,
                column,
                f"variable '{name}' has no value",
                expected=f"a default in its variable block, -var {name}=VALUE, a -var-file or TF_VAR_{name}",
            )
        return value


def auto_var_files(directory: Path) -> list[Path]:
    """The variable files Terraform loads by itself from the configuration's directory, in order."""
    named = [directory / "terraform.tfvars", directory / "terraform.tfvars.json"]
    auto = sorted([*directory.glob("*.auto.tfvars"), *directory.glob("*.auto.tfvars.json")], key=lambda p: p.name)
    return [p for p in [*named, *auto] if p.is_file()]


def assign(
    declared: dict[str, Declared],
    chk: diagnostics.Checker,
    *,
    env: Mapping[str, str],
    files: Sequence[Path],
    cli: Mapping[str, str],
) -> dict[str, Any]:
    """The value of every declared variable (``MISSING`` when none was given)."""
    values: dict[str, Any] = {n: v.default for n, v in declared.items()}
    for key, raw in env.items():
        if key.startswith("TF_VAR_") and key[7:] in declared:
            _set_raw(declared[key[7:]], raw, values, chk, ENV, f"TF_VAR_{key[7:]}")
    for path in files:
        _apply_file(path, declared, values, chk)
    for name, raw in cli.items():
        if name not in declared:
            near = errors.closest(name, declared)
            chk.error(
                1,
                1,
                f"-var '{name}': no variable of that name is declared in {chk.filename}",
                expected="a declared variable" + (": " + ", ".join(sorted(declared)) if declared else ""),
                suggestion=near[0] if near else None,
                file=CLI,
            )
            continue
        _set_raw(declared[name], raw, values, chk, CLI, f"-var '{name}={raw}'")
    for name, var in declared.items():
        if values[name] is None and not var.nullable:
            values[name] = var.default if var.default is not None else evaluation.MISSING
    return values


def _set_raw(var: Declared, raw: str, values: dict[str, Any], chk: diagnostics.Checker, file: str, what: str) -> None:
    """A value given as text: primitive types take it as a string, others parse it as an HCL expression."""
    try:
        if var.type in typeexpr.PRIMITIVES and not (var.typed and var.type == typeexpr.ANY):
            value: Any = raw
        else:
            root = hcl.parse(f"v = {raw}\n", file)
            value = evaluation.evaluate(root.attributes[0].expr, evaluation.Scope())
        values[var.name] = typeexpr.convert(value, var.type, 1, 1, what)
    except errors.SpecError:
        chk.error(
            1,
            1,
            f"{what} is not a valid {typeexpr.describe(var.type)} expression",
            expected=typeexpr.describe(var.type),
            file=file,
        )
    except evaluation.ExpressionError as exc:
        chk.error(
            1,
            1,
            f"{what} is not a {typeexpr.describe(var.type)}: {exc.message}",
            expected=typeexpr.describe(var.type),
            file=file,
        )


def _apply_file(path: Path, declared: dict[str, Declared], values: dict[str, Any], chk: diagnostics.Checker) -> None:
    fname = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        if fname.endswith(".json"):
            from velyrix.declarations import jsonconfig  # only JSON variable files pay for it

            root = jsonconfig.parse_vars(text, fname)
        else:
            root = hcl.parse(text, fname)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        chk.error(1, 1, f"cannot read variables file: {reason}", expected="a readable .tfvars file", file=fname)
        return
    except errors.SpecError as exc:
        chk.diagnostics.extend(exc.diagnostics)
        return
    for block in root.blocks:
        chk.error(
            block.line,
            block.column,
            f"unexpected block '{block.type}' in a variables file",
            expected="name = value lines",
            file=fname,
        )
    for attr in root.attributes:
        if attr.name not in declared:
            near = errors.closest(attr.name, declared)
            chk.error(
                attr.line,
                attr.column,
                f"no variable '{attr.name}' is declared",
                expected="a declared variable",
                suggestion=near[0] if near else None,
                file=fname,
            )
            continue
        var = declared[attr.name]
        try:
            value = evaluation.evaluate(attr.expr, evaluation.Scope())
            values[attr.name] = typeexpr.convert(value, var.type, attr.line, attr.column, attr.name)
        except evaluation.ExpressionError as exc:
            kind = typeexpr.describe(var.type)
            chk.error(
                exc.line,
                exc.column,
                f"value of '{attr.name}' is not a {kind}: {exc.message}",
                expected=kind,
                file=fname,
            )


def validate(declared: dict[str, Declared], values: dict[str, Any], chk: diagnostics.Checker) -> None:
    """Run every ``validation`` block whose variable has a value; a false condition reports its message."""
    scope = evaluation.Scope(roots={"var": Variables(values)})
    for var in declared.values():
        if values.get(var.name) is evaluation.MISSING:
            continue
        for block in var.validations:
            _validation(var, block, scope, values, chk)


def _validation(var: Declared, block: hcl.Block, scope: Any, values: dict[str, Any], chk: diagnostics.Checker) -> None:
    file = block.file or None
    attrs = {a.name: a for a in block.attributes}
    for a in block.attributes:
        if a.name not in ("condition", "error_message"):
            chk.unknown(a.line, a.column, "attribute", a.name, ["condition", "error_message"], "in validation", file)
    if "condition" not in attrs or "error_message" not in attrs:
        chk.error(
            block.line,
            block.column,
            "a validation block needs condition and error_message",
            expected='validation { condition = ..., error_message = "..." }',
            file=file,
        )
        return
    cond = attrs["condition"]
    try:
        ok = typeexpr.convert(evaluation.evaluate(cond.expr, scope), typeexpr.BOOL, cond.line, cond.column, "condition")
        message = evaluation.evaluate(attrs["error_message"].expr, scope)
    except evaluation.ExpressionError as exc:
        chk.add(exc, file)
        return
    if not ok:
        shown = "(sensitive value)" if var.sensitive else typeexpr.show(values[var.name])
        chk.error(
            cond.line,
            cond.column,
            f"invalid value for variable '{var.name}': {message}",
            expected=f"a value that meets the condition (got {shown})",
            file=file,
        )


def given(values: dict[str, Any]) -> dict[str, Any]:
    """The variables that have a value."""
    return {k: v for k, v in values.items() if v is not evaluation.MISSING}
