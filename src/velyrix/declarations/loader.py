"""Load a declaration file: parse HCL, resolve variables, check every attribute, build ``SpecFile``.

All problems of a file are collected and raised together as one ``SpecError`` whose diagnostics carry
file:line:column, what was expected and the closest valid value.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from velyrix import catalog, errors
from velyrix.declarations import expressions, hcl, models, schema
from velyrix.declarations.checks import Checker as _Checker
from velyrix.declarations.checks import catalog_checks as _catalog_checks
from velyrix.declarations.checks import cross_checks as _cross_checks
from velyrix.declarations.checks import find_attribute as _find

CLI = "<command line>"


def load(
    path: str | Path, variables: Mapping[str, str] | None = None, var_files: Sequence[str | Path] = ()
) -> models.SpecFile:
    """Read ``path`` and return its validated ``SpecFile``.

    ``variables`` are ``-var name=value`` strings from the command line (converted by the declared
    type); ``var_files`` are ``.tfvars`` files of ``name = value`` lines. Raises ``SpecError``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise errors.SpecError(
            [errors.Diagnostic(str(path), 1, 1, f"cannot read file: {reason}", expected="a readable UTF-8 HCL file")]
        ) from None
    return loads(text, str(path), variables=variables, var_files=var_files)


def loads(
    text: str,
    filename: str = "<string>",
    variables: Mapping[str, str] | None = None,
    var_files: Sequence[str | Path] = (),
) -> models.SpecFile:
    """Like ``load`` for HCL ``text`` named ``filename`` in messages."""
    root = hcl.parse(text, filename)
    chk = _Checker(filename)
    values = _resolve_variables(root, chk, variables or {}, var_files)
    region: str | None = None
    clusters: list[models.ClusterSpec] = []
    region_declared = any(b.type == "provider" and any(a.name == "region" for a in b.attributes) for b in root.blocks)
    _no_attributes(root, chk, "at the top level")
    for block in root.blocks:
        if block.type not in schema.TOP_BLOCKS:
            chk.unknown(block.line, block.column, "block type", block.type, schema.TOP_BLOCKS)
        elif block.type == "provider":
            region = _provider(block, chk, values) or region
    for block in root.blocks:
        if block.type == "resource":
            cluster = _resource(block, chk, values, region, region_declared)
            if cluster is not None:
                clusters.append(cluster)
    _cross_checks(root, clusters, chk)
    if not clusters and not chk.diagnostics:
        chk.error(1, 1, "no velyrix_cluster resource in file", expected='resource "velyrix_cluster" "NAME" { ... }')
    if chk.diagnostics:
        raise errors.SpecError(sorted(chk.diagnostics, key=lambda d: (d.file != filename, d.file, d.line, d.column)))
    assert region is not None or clusters
    return models.SpecFile(
        path=filename,
        region=region or clusters[0].region,
        clusters=tuple(clusters),
        variables={k: v for k, v in values.items() if v is not expressions._MISSING},
    )


# --- variables -------------------------------------------------------------------------------------


def _resolve_variables(
    root: hcl.Block, chk: _Checker, cli_vars: Mapping[str, str], var_files: Sequence[str | Path]
) -> dict[str, Any]:
    declared: dict[str, tuple[str | None, hcl.Block]] = {}
    values: dict[str, Any] = {}
    for block in root.blocks:
        if block.type != "variable":
            continue
        if len(block.labels) != 1:
            chk.error(
                block.line, block.column, "a variable block takes exactly one label", expected='variable "NAME" { ... }'
            )
            continue
        name = block.labels[0]
        if name in declared:
            chk.error(block.line, block.column, f"variable '{name}' is declared twice")
            continue
        _no_blocks(block, chk, f"in variable '{name}'")
        vtype: str | None = None
        values[name] = expressions._MISSING
        for attr in block.attributes:
            if attr.name not in schema.VARIABLE:
                chk.unknown(
                    attr.line, attr.column, "attribute", attr.name, list(schema.VARIABLE), f"in variable '{name}'"
                )
            elif attr.name == "type":
                vtype = hcl._identifier(attr.expr) if attr.expr is not None else None
                if vtype not in schema.VARIABLE_TYPES:
                    chk.unknown(attr.line, attr.column, "variable type", str(vtype), schema.VARIABLE_TYPES)
                    vtype = None
            elif attr.name == "default":
                try:
                    values[name] = expressions.evaluate(attr.expr, {})
                except expressions.ExpressionError as exc:
                    chk.diagnostics.append(exc.diagnostic(chk.filename))
        declared[name] = (vtype, block)
    for name, (vtype, block) in declared.items():
        if values[name] is not expressions._MISSING and vtype:
            ok, _ = _convert_var(values[name], vtype)
            if not ok:
                chk.error(block.line, block.column, f"default of variable '{name}' is not a {vtype}", expected=vtype)
    for var_file in var_files:
        _apply_var_file(Path(var_file), declared, values, chk)
    for name, raw in cli_vars.items():
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
        vtype = declared[name][0]
        ok, value = _convert_var(_parse_cli_value(raw, vtype), vtype or "any")
        if not ok:
            chk.error(1, 1, f"-var '{name}={raw}' is not a {vtype}", expected=vtype, file=CLI)
            continue
        values[name] = value
    return values


def _parse_cli_value(raw: str, vtype: str | None) -> Any:
    if vtype == "string":
        return raw
    if raw in ("true", "false"):
        return raw == "true"
    try:
        return int(raw)
    except ValueError:
        try:
            return float(raw)
        except ValueError:
            return raw


def _convert_var(value: Any, vtype: str) -> tuple[bool, Any]:
    if vtype == "any":
        return True, value
    if vtype == "string":
        return (isinstance(value, (str, int, float)) and not isinstance(value, bool)), (
            value if isinstance(value, str) else json.dumps(value)
        )
    if vtype == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool), value
    if vtype == "bool":
        return isinstance(value, bool), value
    return True, value


def _apply_var_file(
    path: Path, declared: dict[str, tuple[str | None, hcl.Block]], values: dict[str, Any], chk: _Checker
) -> None:
    fname = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        root = hcl.parse(text, fname)
    except OSError as exc:
        chk.error(1, 1, f"cannot read -var-file: {exc.strerror or exc}", expected="a readable .tfvars file", file=fname)
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
        try:
            value = expressions.evaluate(attr.expr, {})
        except expressions.ExpressionError as exc:
            chk.diagnostics.append(exc.diagnostic(fname))
            continue
        vtype = declared[attr.name][0] or "any"
        ok, value = _convert_var(value, vtype)
        if not ok:
            chk.error(attr.line, attr.column, f"value of '{attr.name}' is not a {vtype}", expected=vtype, file=fname)
            continue
        values[attr.name] = value


# --- blocks ----------------------------------------------------------------------------------------


def _no_attributes(block: hcl.Block, chk: _Checker, where: str) -> None:
    for attr in block.attributes:
        chk.error(
            attr.line,
            attr.column,
            f"unexpected attribute '{attr.name}' {where}",
            expected="a block: " + ", ".join(schema.TOP_BLOCKS),
        )


def _no_blocks(block: hcl.Block, chk: _Checker, where: str) -> None:
    for inner in block.blocks:
        chk.error(inner.line, inner.column, f"unexpected block '{inner.type}' {where}", expected="attributes only")


def _provider(block: hcl.Block, chk: _Checker, values: dict[str, Any]) -> str | None:
    if len(block.labels) != 1:
        chk.error(block.line, block.column, "a provider block takes exactly one label", expected='provider "velyrix"')
        return None
    if block.labels[0] not in schema.PROVIDERS:
        chk.unknown(block.line, block.column, "provider", block.labels[0], schema.PROVIDERS)
        return None
    _no_blocks(block, chk, "in provider")
    attrs = _attributes(block, schema.PROVIDER, chk, values, "provider")
    region = attrs.get("region")
    if isinstance(region, str):
        attr = _find(block, "region")
        if region not in catalog.region_names():
            chk.unknown(attr.line, attr.column, "region", region, catalog.region_names())
            return None
    return region if isinstance(region, str) else None


def _attributes(
    block: hcl.Block, attr_schema: Mapping[str, schema.AttrSchema], chk: _Checker, values: dict[str, Any], where: str
) -> dict[str, Any]:
    """Evaluate and type-check the attributes of ``block``; unknown, duplicate and missing ones are errors."""
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for attr in block.attributes:
        if attr.name not in attr_schema:
            chk.unknown(attr.line, attr.column, "attribute", attr.name, list(attr_schema), f"in {where}")
            continue
        if attr.name in seen:
            chk.error(attr.line, attr.column, f"attribute '{attr.name}' is set twice in {where}")
            continue
        seen.add(attr.name)
        try:
            value = expressions.evaluate(attr.expr, values)
        except expressions.ExpressionError as exc:
            chk.diagnostics.append(exc.diagnostic(chk.filename))
            continue
        checked = _typed(value, attr_schema[attr.name], attr, chk, where)
        if checked is not _INVALID:
            out[attr.name] = checked
    for name, spec in attr_schema.items():
        if spec.required and name not in seen:
            chk.error(
                block.line,
                block.column,
                f"missing required attribute '{name}' in {where}",
                expected=f"{name} = <{spec.type}>",
            )
    return out


_INVALID: Any = object()


def _typed(value: Any, spec: schema.AttrSchema, attr: hcl.Attribute, chk: _Checker, where: str) -> Any:
    name, line, col = attr.name, attr.line, attr.column
    if spec.type == "any":
        return value
    if isinstance(value, str) and value in spec.words:
        return value
    words = f" or {' / '.join(repr(w) for w in spec.words)}" if spec.words else ""
    if spec.type == "string":
        if not isinstance(value, str):
            chk.error(
                line, col, f"'{name}' must be a string, got {_describe(value)}", expected=f"a quoted string{words}"
            )
            return _INVALID
        allowed = schema.ALLOWED_WORDS.get(name)
        if allowed and value not in allowed:
            chk.unknown(line, col, f"{name}", value, allowed)
            return _INVALID
        return value
    if spec.type == "bool":
        if not isinstance(value, bool):
            chk.error(line, col, f"'{name}' must be true or false, got {_describe(value)}", expected="true or false")
            return _INVALID
        return value
    number_ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if spec.type == "integer" and number_ok and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not number_ok or (spec.type == "integer" and not isinstance(value, int)):
        kind = "a whole number" if spec.type == "integer" else "a number"
        if isinstance(value, str) and _is_number(value):
            kind += " without quotes"
        chk.error(line, col, f"'{name}' must be {kind}, got {_describe(value)}", expected=f"{kind}{words}")
        return _INVALID
    if spec.minimum is not None and (value < spec.minimum or (spec.exclusive_minimum and value <= spec.minimum)):
        bound = f"> {spec.minimum:g}" if spec.exclusive_minimum else f">= {spec.minimum:g}"
        chk.error(line, col, f"'{name}' = {value} is out of range in {where}", expected=f"a value {bound}")
        return _INVALID
    if spec.maximum is not None and value > spec.maximum:
        chk.error(line, col, f"'{name}' = {value} is out of range in {where}", expected=f"a value <= {spec.maximum:g}")
        return _INVALID
    return value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"bool {str(value).lower()}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return f"{type(value).__name__} {value!r}"


def _resource(
    block: hcl.Block, chk: _Checker, values: dict[str, Any], region: str | None, region_declared: bool
) -> models.ClusterSpec | None:
    if len(block.labels) != 2:
        chk.error(
            block.line, block.column, "a resource block takes two labels", expected='resource "velyrix_cluster" "NAME"'
        )
        return None
    rtype, rname = block.labels
    if rtype not in schema.RESOURCE_TYPES:
        chk.unknown(block.line, block.column, "resource type", rtype, schema.RESOURCE_TYPES)
        return None
    address = f"{rtype}.{rname}"
    where = f"resource {address}"
    attrs = _attributes(block, schema.CLUSTER, chk, values, where)
    nested: dict[str, Any] = {}
    for inner in block.blocks:
        if inner.type not in schema.CLUSTER_BLOCKS:
            chk.unknown(inner.line, inner.column, "block", inner.type, schema.CLUSTER_BLOCKS, f"in {where}")
            continue
        if inner.type in nested:
            chk.error(inner.line, inner.column, f"block '{inner.type}' appears twice in {where}")
            continue
        if inner.labels:
            chk.error(
                inner.line, inner.column, f"block '{inner.type}' takes no labels", expected=f"{inner.type} {{ ... }}"
            )
        _no_blocks(inner, chk, f"in {inner.type}")
        nested[inner.type] = (
            inner,
            _attributes(inner, schema.block_schema(inner.type), chk, values, f"{inner.type} of {address}"),
        )
    ok = _catalog_checks(block, attrs, chk, region, region_declared)
    required = set(schema.CLUSTER) - {"region"}
    if not ok or not required <= set(attrs):
        return None
    storage = models.StorageSpec(**{k: float(v) for k, v in nested.get("storage", (None, {}))[1].items()})
    workload = None
    if "workload" in nested:
        wblock, wattrs = nested["workload"]
        workload = _workload(wblock, wattrs, chk)
    acceptance = models.AcceptanceSpec(**nested.get("acceptance", (None, {}))[1])
    return models.ClusterSpec(
        address=address,
        name=attrs["name"],
        region=attrs.get("region") or region or "",
        node_type=attrs["node_type"],
        node_count=int(attrs["node_count"]),
        fabric=attrs["fabric"],
        scheduler=attrs["scheduler"],
        storage=storage,
        workload=workload,
        acceptance=acceptance,
        position=models.Position(chk.filename, block.line, block.column),
    )


def _workload(block: hcl.Block, attrs: dict[str, Any], chk: _Checker) -> models.WorkloadSpec | None:
    has_params = "model_params" in attrs
    arch = ("vocab", "hidden", "ffn", "layers", "heads")
    has_arch = any(k in attrs for k in arch)
    if not has_params and not has_arch:
        chk.error(
            block.line,
            block.column,
            "workload needs the model size",
            expected="model_params = <count>, or vocab, hidden, ffn, layers and heads",
        )
        return None
    if has_arch and not has_params:
        missing = [k for k in arch if k not in attrs]
        if missing:
            chk.error(
                block.line,
                block.column,
                f"workload architecture is incomplete: missing {', '.join(missing)}",
                expected="vocab, hidden, ffn, layers, heads (and kv_heads)",
            )
            return None
    fields = {f.name for f in dataclasses.fields(models.WorkloadSpec)}
    try:
        return models.WorkloadSpec(**{k: v for k, v in attrs.items() if k in fields})
    except (TypeError, ValueError) as exc:
        chk.error(block.line, block.column, f"invalid workload: {exc}")
        return None
