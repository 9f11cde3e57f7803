"""Load a declaration file: parse HCL, resolve variables, check every attribute, build ``SpecFile``.

All problems of a file are collected and raised together as one ``SpecError`` whose diagnostics carry
file:line:column, what was expected and the closest valid value.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from velyrix import catalog, errors, settings
from velyrix.declarations import (
    checks,
    configuration,
    diagnostics,
    evaluation,
    files,
    hcl,
    models,
    rules,
    schema,
    typeexpr,
)
from velyrix.declarations import variables as variables_mod

_Checker = diagnostics.Checker
_find = checks.find_attribute
_catalog_checks = checks.catalog_checks
_cross_checks = checks.cross_checks


def load(
    path: str | Path,
    variables: Mapping[str, str] | None = None,
    var_files: Sequence[str | Path] = (),
    env: Mapping[str, str] | None = None,
) -> models.SpecFile:
    """Read the configuration at ``path`` (a ``.tf`` / ``.tf.json`` file, or a directory of them) and
    return its validated ``SpecFile``.

    ``variables`` are ``-var name=value`` strings from the command line (converted by the declared
    type); ``var_files`` are ``.tfvars`` / ``.tfvars.json`` files; ``env`` (default: the process
    environment) supplies ``TF_VAR_name`` values; ``terraform.tfvars`` and ``*.auto.tfvars`` of the
    configuration's directory are loaded first, as Terraform does. Raises ``SpecError``.
    """
    roots, base_dir = files.read_configuration(Path(path))
    auto = variables_mod.auto_var_files(Path(base_dir))
    return _build(
        roots,
        str(path),
        base_dir,
        variables or {},
        [*auto, *(Path(f) for f in var_files)],
        settings.terraform_variables() if env is None else env,
    )


def loads(
    text: str,
    filename: str = "<string>",
    variables: Mapping[str, str] | None = None,
    var_files: Sequence[str | Path] = (),
) -> models.SpecFile:
    """Like ``load`` for the HCL (or, for a ``.tf.json`` name, JSON) ``text`` named ``filename``; no
    environment variables and no auto-loaded variable files."""
    root = files.parse_text(text, filename)
    return _build([root], filename, ".", variables or {}, [Path(f) for f in var_files], {})


def _build(
    roots: list[hcl.Block],
    filename: str,
    base_dir: str,
    cli_vars: Mapping[str, str],
    var_files: list[Path],
    env: Mapping[str, str],
) -> models.SpecFile:
    chk = _Checker(filename)
    config = configuration.build(roots, chk, base_dir=base_dir, cli_vars=cli_vars, var_files=var_files, env=env)
    region: str | None = None
    clusters: list[models.ClusterSpec] = []
    region_declared = any(any(a.name == "region" for a in b.attributes) for b in config.providers)
    for block in config.providers:
        with _in_file(chk, block.file):
            region = _provider(block, chk, config.scope) or region
    lifecycles: dict[str, models.Lifecycle] = {}
    sensitive_arguments: dict[str, tuple[str, ...]] = {}
    for inst in config.instances:
        if inst.type != "velyrix_cluster":  # connectivity resources: declarations/connectivity.py
            continue
        with _in_file(chk, inst.block.file):
            cluster = _resource(inst.block, chk, inst.scope, region, region_declared, inst.address)
        if cluster is not None:
            clusters.append(cluster)
            lifecycles[cluster.address] = inst.lifecycle
            if inst.sensitive:
                sensitive_arguments[cluster.address] = inst.sensitive
    _cross_checks(config.providers, clusters, chk)
    if not clusters and not chk.diagnostics:
        chk.error(1, 1, "no velyrix_cluster resource in file", expected='resource "velyrix_cluster" "NAME" { ... }')
    if chk.diagnostics:
        unique = {(d.file, d.line, d.column, d.message): d for d in chk.diagnostics}.values()
        raise errors.SpecError(sorted(unique, key=lambda d: (d.file != filename, d.file, d.line, d.column)))
    assert region is not None or clusters
    return models.SpecFile(
        path=filename,
        region=region or clusters[0].region,
        clusters=tuple(clusters),
        variables=variables_mod.given(config.values),
        outputs=config.outputs,
        lifecycles=lifecycles,
        sensitive_arguments=sensitive_arguments,
        sensitive_variables=tuple(sorted(n for n, v in config.declared.items() if v.sensitive)),
    )


@contextlib.contextmanager
def _in_file(chk: _Checker, file: str) -> Iterator[None]:
    """Diagnostics recorded inside name ``file`` (a block of a multi-file configuration)."""
    saved = chk.filename
    chk.filename = file or saved
    try:
        yield
    finally:
        chk.filename = saved


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


def _provider(block: hcl.Block, chk: _Checker, values: evaluation.Scope) -> str | None:
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
    block: hcl.Block, attr_schema: Mapping[str, schema.AttrSchema], chk: _Checker, values: evaluation.Scope, where: str
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
            value = evaluation.evaluate(attr.expr, values)
        except evaluation.ExpressionError as exc:
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
    value = _converted(value, spec.type)
    words = f" or {' / '.join(repr(w) for w in spec.words)}" if spec.words else ""
    if spec.type == "string":
        if not isinstance(value, str):
            chk.error(
                line, col, f"'{name}' must be a string, got {_describe(value)}", expected=f"a quoted string{words}"
            )
            return _INVALID
        problem = rules.text_problem(value) or (rules.name_problem(value) if name == "name" else None)
        if problem:
            suggestion = rules.suggest_name(value) if name == "name" else None
            chk.error(
                line, col, f"'{name}' = {_quoted(value)} {problem}", expected="a valid name", suggestion=suggestion
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
    problem = rules.number_problem(value) if number_ok else None
    if problem:
        chk.error(line, col, f"'{name}' = {value!r} {problem}", expected="a finite number within +-2**53")
        return _INVALID
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


def _quoted(value: str) -> str:
    """``value`` in double quotes, verbatim but with non-printable characters escaped (NUL as \\x00)."""
    return json.dumps(value, ensure_ascii=False) if value.isprintable() else json.dumps(value)


def _converted(value: Any, kind: str) -> Any:
    """Terraform's automatic conversion to an argument's type: ``"64"`` for a number, ``8`` or ``true``
    for a string, ``"true"`` for a bool; a value that does not convert is returned unchanged."""
    target = {"integer": typeexpr.NUMBER, "number": typeexpr.NUMBER, "string": typeexpr.STRING}.get(kind, kind)
    if value is None or isinstance(value, (list, dict)) or target not in typeexpr.PRIMITIVES:
        return value
    try:
        return typeexpr.convert(value, target)
    except evaluation.ExpressionError:
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
    block: hcl.Block,
    chk: _Checker,
    values: evaluation.Scope,
    region: str | None,
    region_declared: bool,
    address: str,
) -> models.ClusterSpec | None:
    """The ``ClusterSpec`` of one resource instance (labels already checked by ``expansion``)."""
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
    required = {name for name, spec in schema.CLUSTER.items() if spec.required}
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
        operating_mode=attrs.get("operating_mode", "managed"),
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
