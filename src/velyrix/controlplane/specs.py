"""Cluster specs over the API: the JSON body shape (generated from ``velyrix.declarations.models`` so it
follows the loader's models), and its validation through the very same loader checks as an HCL file.

The body is rendered to a canonical HCL resource block, one attribute per line, and loaded with
``velyrix.declarations.loader.loads``; diagnostics name the JSON field (``storage.parallel_fs_tb: ...``).
"""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any

import pydantic

from velyrix import catalog, errors
from velyrix.declarations import loader, models, rules, schema

NAME_PATTERN = rules.NAME_PATTERN
WORD_PATTERN = rules.WORD_PATTERN


def _attr_schema(name: str, spec: schema.AttrSchema) -> dict[str, Any]:
    """JSON Schema keywords of the loader's checks of one attribute (``loader._typed``): its range (numbers
    within +-2**53, ``rules.number_problem``) and its allowed words. Numeric keywords leave ``null`` and the
    words (``"auto"``) alone, as JSON Schema applies them to numbers only."""
    if spec.type in ("number", "integer"):
        low = spec.minimum if spec.minimum is not None else -rules.MAX_NUMBER
        bound = "exclusiveMinimum" if spec.exclusive_minimum else "minimum"
        return {bound: low, "maximum": spec.maximum if spec.maximum is not None else rules.MAX_NUMBER}
    if name in schema.ALLOWED_WORDS:
        return {"enum": list(schema.ALLOWED_WORDS[name])}
    return {}


def _body_model(cls: type, name: str, block: str, extra: dict[str, Any] | None = None) -> type[pydantic.BaseModel]:
    """A pydantic model (unknown fields refused) with the fields, types and defaults of dataclass ``cls``; its
    JSON Schema carries the ranges and words of the loader's ``block`` schema (the loader still checks them,
    answering with the field's line) and ``extra`` (model-level keywords)."""
    hints = typing.get_type_hints(cls)
    attrs = schema.block_schema(block)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else None
        keywords = _attr_schema(f.name, attrs[f.name]) if f.name in attrs else {}
        fields[f.name] = (hints[f.name], pydantic.Field(default, json_schema_extra=keywords or None))
    config = pydantic.ConfigDict(extra="forbid", json_schema_extra=extra)
    model: type[pydantic.BaseModel] = pydantic.create_model(name, __config__=config, **fields)
    return model


_ARCHITECTURE = ("vocab", "hidden", "ffn", "layers", "heads")
WORKLOAD_CROSS_FIELD_RULES = (
    "tp x pp x dp divides the cluster's GPUs (node_count x the node type's GPUs)",
    "pp <= layers",
    "heads <= hidden",
    "kv_heads divides heads",
)
"""What the planner checks (planners/checkpoints.py) that JSON Schema cannot say (it compares or divides one
field by another): in the schema's description; a body breaking one is refused with 422 ``invalid_input``."""
_WORKLOAD_RULES = {
    "description": "The training job the storage and goodput planners size for. Also required, beyond what "
    "this schema can state: " + "; ".join(WORKLOAD_CROSS_FIELD_RULES) + ".",
    "allOf": [
        {  # loader._workload, planners.checkpoints.architecture_from: the model's size as a count (and no
            # architecture field), or its whole architecture (kv_heads defaults to heads)
            "anyOf": [
                {
                    "required": ["model_params"],
                    "properties": {
                        "model_params": {"type": "number"},
                        **{k: {"type": "null"} for k in (*_ARCHITECTURE, "kv_heads")},
                    },
                },
                {"required": list(_ARCHITECTURE), "properties": {k: {"type": "integer"} for k in _ARCHITECTURE}},
            ]
        },
        {  # planners/checkpoints.py: ZeRO stage 3 is not combined with pipeline parallelism
            "anyOf": [
                {"properties": {"zero_stage": {"maximum": 2}}},
                {"properties": {"pp": {"const": 1}}},
            ]
        },
    ],
}
StorageBody = _body_model(models.StorageSpec, "StorageBody", "storage")
WorkloadBody = _body_model(models.WorkloadSpec, "WorkloadBody", "workload", _WORKLOAD_RULES)
AcceptanceBody = _body_model(models.AcceptanceSpec, "AcceptanceBody", "acceptance")


def _offers() -> dict[str, Any]:
    """One ``oneOf`` variant per (region, node type) the catalog offers (``checks``: the node type's fabrics,
    at most the region's capacity of it)."""
    out = []
    for region in catalog.region_names():
        for node_type, capacity in sorted(catalog.region(region).capacity.items()):
            if capacity <= 0 or node_type not in catalog.node_type_names():
                continue
            props = {
                "region": {"const": region},
                "node_type": {"const": node_type},
                "fabric": {"enum": list(catalog.node_type(node_type).fabrics)},
                "node_count": {"maximum": capacity},
            }
            out.append({"properties": props})
    return {"oneOf": out}


def _enum(names: typing.Iterable[str]) -> dict[str, Any]:
    """``json_schema_extra`` of a field that takes one of ``names`` (an OpenAPI enum)."""
    return {"enum": list(names)}


class ClusterSpecBody(pydantic.BaseModel):
    """A ``velyrix_cluster`` resource as JSON (what ``velyrix apply`` sends)."""

    model_config = pydantic.ConfigDict(extra="forbid", json_schema_extra=_offers())

    name: str = pydantic.Field(pattern=NAME_PATTERN, description="cluster name, unique in the tenant")
    region: str = pydantic.Field(pattern=WORD_PATTERN, json_schema_extra=_enum(catalog.region_names()))
    node_type: str = pydantic.Field(pattern=WORD_PATTERN, json_schema_extra=_enum(catalog.node_type_names()))
    node_count: int = pydantic.Field(ge=1, le=100_000)
    fabric: str = pydantic.Field(pattern=WORD_PATTERN, json_schema_extra=_enum(catalog.fabric_names()))
    scheduler: str = pydantic.Field(pattern=WORD_PATTERN, json_schema_extra=_enum(list(models.SCHEDULERS)))
    storage: StorageBody | None = None  # type: ignore[valid-type]
    workload: WorkloadBody | None = None  # type: ignore[valid-type]
    acceptance: AcceptanceBody | None = None  # type: ignore[valid-type]
    operating_mode: typing.Literal["managed", "self_operated"] = pydantic.Field(
        default="managed", description="managed: Velyrix operates the nodes; self_operated: tenant root (and BMC)"
    )
    address: str | None = pydantic.Field(
        default=None,
        # an instance of count (``[0]``) or for_each (``["key"]``) keeps its index in the address
        pattern=r"^velyrix_cluster\." + rules.LABEL_PATTERN[1:-1] + "(" + rules.INSTANCE_INDEX_PATTERN + ")?$",
    )


def _hcl_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, int) else json.dumps(value)
    text = json.dumps(str(value))
    return text.replace("${", "$${").replace("%{", "%%{")  # no interpolation of user text


def to_hcl(body: ClusterSpecBody) -> tuple[str, dict[int, str]]:
    """Canonical HCL of ``body`` and, per line number, the JSON field it came from."""
    label = (body.address or f"velyrix_cluster.{body.name}").split(".", 1)[1]
    lines = [f'resource "velyrix_cluster" {json.dumps(label)} {{']
    where: dict[int, str] = {1: "(body)"}
    for key in ("name", "region", "node_type", "node_count", "fabric", "scheduler", "operating_mode"):
        lines.append(f"  {key} = {_hcl_value(getattr(body, key))}")
        where[len(lines)] = key
    for block in ("storage", "workload", "acceptance"):
        sub = getattr(body, block)
        if sub is None:
            continue
        lines.append(f"  {block} {{")
        where[len(lines)] = block
        for key, value in sub.model_dump(exclude_none=True, exclude_unset=True).items():
            lines.append(f"    {key} = {_hcl_value(value)}")
            where[len(lines)] = f"{block}.{key}"
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n", where


def validate(body: ClusterSpecBody) -> models.ClusterSpec:
    """The ``ClusterSpec`` of ``body`` after every check the HCL loader makes (catalog names, fabric
    fit, region capacity, workload consistency). Raises ``SpecError`` (422) naming the JSON fields."""
    text, where = to_hcl(body)
    try:
        spec_file = loader.loads(text, "request body")
    except errors.SpecError as exc:
        raise errors.SpecError(
            [dataclasses.replace(d, message=f"{where.get(d.line, '(body)')}: {d.message}") for d in exc.diagnostics]
        ) from None
    return spec_file.clusters[0]


def to_body(spec: models.ClusterSpec) -> dict[str, Any]:
    """The JSON body of a loaded ``ClusterSpec`` (for the CLI's ``apply``)."""
    out: dict[str, Any] = {
        "name": spec.name,
        "region": spec.region,
        "node_type": spec.node_type,
        "node_count": spec.node_count,
        "fabric": spec.fabric,
        "scheduler": spec.scheduler,
        "operating_mode": spec.operating_mode,
        "address": spec.address,
        "storage": dataclasses.asdict(spec.storage),
        "acceptance": dataclasses.asdict(spec.acceptance),
    }
    if spec.workload is not None:
        out["workload"] = {k: v for k, v in dataclasses.asdict(spec.workload).items() if v is not None}
    return out
