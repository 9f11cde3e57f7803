"""What may be declared where: attribute types, required attributes and allowed values per block.

The ``workload`` and ``acceptance`` schemas are derived from their dataclasses in ``models`` so that a
new field is accepted as soon as it exists.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from velyrix import catalog
from velyrix.declarations import models
from velyrix.frozen import frozen


@frozen
class AttrSchema:
    """One attribute: its type (``string``, ``integer``, ``number``, ``bool``, ``any``), whether it is
    required, the special words it also accepts (e.g. ``auto``), and a value range."""

    type: str
    required: bool = False
    words: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False


def _from_annotation(annotation: str, name: str) -> AttrSchema:
    words: tuple[str, ...] = ("auto",) if "Literal[" in annotation and "auto" in annotation else ()
    if "bool" in annotation:
        kind = "bool"
    elif "float" in annotation:
        kind = "number"
    elif "int" in annotation:
        kind = "integer"
    else:
        kind = "string"
    minimum: float | None = 0.0 if kind in ("number", "integer") else None
    maximum: float | None = None
    exclusive = False
    if name in RANGES:
        minimum, maximum = RANGES[name]
    elif name in FRACTIONS:
        minimum, maximum, exclusive = 0.0, 1.0, True
    elif name in POSITIVE:
        exclusive = True
    elif name in AT_LEAST_ONE:
        minimum = 1.0
    return AttrSchema(kind, words=words, minimum=minimum, maximum=maximum, exclusive_minimum=exclusive)


FRACTIONS = {"au_target", "max_checkpoint_overhead", "goodput_target"}
POSITIVE = {
    "checkpoint_interval_s",
    "step_time_s",
    "sample_mb",
    "samples_per_s_per_gpu",
    "node_failure_rate",
}
AT_LEAST_ONE = {
    "vocab",
    "hidden",
    "ffn",
    "layers",
    "heads",
    "kv_heads",
    "tp",
    "pp",
    "dp",
    "keep_checkpoints",
    "promote_every",
}

RANGES: dict[str, tuple[float, float | None]] = {
    "zero_stage": (0.0, 3.0),  # ZeRO stages 0-3 (planners/checkpoints.py parallelism)
    "model_params": (1.0, None),  # a count of parameters
    "bytes_per_param": (0.125, None),  # no number format stores a parameter in less than one bit
}

ALLOWED_WORDS: dict[str, tuple[str, ...]] = {
    "checkpoint_mode": models.CHECKPOINT_MODES,
    "read_pattern": models.READ_PATTERNS,
    "scheduler": models.SCHEDULERS,
    "operating_mode": models.OPERATING_MODES,
}


def dataclass_schema(cls: Any) -> dict[str, AttrSchema]:
    """Attribute schema of a spec dataclass, from its field annotations."""
    return {f.name: _from_annotation(str(f.type), f.name) for f in dataclasses.fields(cls)}


PROVIDER = {"region": AttrSchema("string", required=True)}

CLUSTER = {
    "name": AttrSchema("string", required=True),
    "node_type": AttrSchema("string", required=True),
    "node_count": AttrSchema("integer", required=True, minimum=1),
    "fabric": AttrSchema("string", required=True),
    "scheduler": AttrSchema("string", required=True),
    "region": AttrSchema("string"),
    "operating_mode": AttrSchema("string"),
}

STORAGE = {
    key: AttrSchema("number", minimum=0.0, maximum=catalog.storage_tier_by_hcl_key(key).param("max_tb"))
    for key in models.StorageSpec().by_key()
}

CLUSTER_BLOCKS = ("storage", "workload", "acceptance")

VARIABLE = {
    "default": AttrSchema("any"),
    "type": AttrSchema("any"),
    "description": AttrSchema("string"),
    "sensitive": AttrSchema("bool"),
    "nullable": AttrSchema("bool"),
}

TOP_BLOCKS = ("terraform", "provider", "variable", "locals", "output", "resource")
RESOURCE_TYPES = ("velyrix_cluster", "velyrix_private_link", "velyrix_bgp_session", "velyrix_vpn")
"""The connectivity types (all but the first) are read by ``declarations.connectivity``."""
PROVIDERS = ("velyrix",)
VARIABLE_TYPES = ("string", "number", "bool", "any")


def block_schema(block: str) -> dict[str, AttrSchema]:
    """Schema of a nested block of ``velyrix_cluster``."""
    if block == "storage":
        return STORAGE
    if block == "workload":
        return dataclass_schema(models.WorkloadSpec)
    if block == "acceptance":
        return dataclass_schema(models.AcceptanceSpec)
    raise KeyError(block)
