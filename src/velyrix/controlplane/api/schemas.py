"""Response models of the API (they make /openapi.json precise enough for schemathesis) and the
common parameters (pagination, Idempotency-Key, If-Match)."""

from __future__ import annotations

import datetime as dt
from typing import Any, Generic, TypeVar

from fastapi import Header, Query
from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")


class Problem(BaseModel):
    """RFC 9457 problem details, with Velyrix's stable ``code`` and the request id."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    instance: str
    request_id: str | None = None
    hint: str | None = None
    model_config = ConfigDict(extra="allow")


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"description": text, "content": {"application/problem+json": {"schema": Problem.model_json_schema()}}}
    for status, text in (
        (400, "Bad request"),
        (401, "Missing, malformed, expired or revoked API key"),
        (403, "The key lacks the scope"),
        (404, "Not found (or another tenant's)"),
        (409, "Conflict with the current state"),
        (412, "ETag mismatch (If-Match)"),
        (422, "Invalid input"),
        (408, "The body stopped short of its Content-Length (docs/api-limits.md)"),
        (413, "Body over the route's limit (docs/api-limits.md)"),
        (414, "Path or query over its limit (docs/api-limits.md)"),
        (503, "Database or disk unavailable; retry after Retry-After seconds"),
    )
}


class Page(BaseModel, Generic[T]):
    """One page of a list; pass ``next_cursor`` as ``cursor`` to get the next (null at the end)."""

    items: list[T]
    next_cursor: str | None = None


def one_of(names: Any) -> dict[str, Any]:
    """``json_schema_extra`` of a field taking one of ``names`` (from the catalog): an OpenAPI enum, while the
    route's own check keeps its "did you mean" answer for anything else."""
    return {"enum": list(names)}


def variants(prop: str, cases: dict[str, dict[str, Any]], *, required: bool = False) -> dict[str, Any]:
    """``json_schema_extra`` of a model whose other fields depend on ``prop``: one ``oneOf`` variant per
    value of ``prop`` (``const``), each narrowing the properties named in its case (e.g. per role, the scopes
    it may hold), which ``required`` makes mandatory in that variant. The route's own checks stay the
    authority; this makes the schema say the same."""
    return {
        "oneOf": [
            {"properties": {prop: {"const": value}, **props}, "required": [prop, *(props if required else ())]}
            for value, props in cases.items()
        ]
    }


_JSON_NUMBER = {"type": "number", "minimum": -(2**63 - 1), "maximum": 2**63 - 1}


def json_value(depth: int = 3) -> dict[str, Any]:
    """JSON Schema of a free-form JSON value as the validation edge accepts it (controlplane/api/edge.py):
    numbers within +-(2**63-1), strings and keys within their lengths. ``depth`` levels of arrays and
    objects are described (the edge allows deeper; a schema need not list every value it accepts)."""
    scalars: list[dict[str, Any]] = [
        {"type": "null"},
        {"type": "boolean"},
        {"type": "string", "maxLength": 16_384},
        _JSON_NUMBER,
    ]
    if depth == 0:
        return {"anyOf": scalars}
    inner = json_value(depth - 1)
    return {
        "anyOf": [
            *scalars,
            {"type": "array", "items": inner, "maxItems": 64},
            json_object(depth - 1, inner),
        ]
    }


def json_object(depth: int = 3, values: dict[str, Any] | None = None) -> dict[str, Any]:
    """JSON Schema of a free-form JSON object (see ``json_value``)."""
    return {
        "type": "object",
        "propertyNames": {"maxLength": 256},
        "additionalProperties": values if values is not None else json_value(depth - 1),
        "maxProperties": 64,
    }


JSON_OBJECT = json_object()
"""``Field(json_schema_extra=JSON_OBJECT)``: a free-form object field, described as ``json_object`` says."""
JSON_OBJECT_OR_NULL: dict[str, Any] = {"anyOf": [json_object(), {"type": "null"}]}


CURSOR_PATTERN = r"^[a-z]{1,12}_[0-9a-f]{1,48}$"


async def cursor_param(  # async: FastAPI runs a sync dependency in a worker thread
    cursor: str | None = Query(
        None,
        max_length=61,
        pattern=CURSOR_PATTERN,
        description="next_cursor of the previous page: the id of the last item seen; the page starts after "
        "it (ids sort by creation). docs/api-limits.md",
    ),
) -> str | None:
    return cursor


async def limit_param(limit: int = Query(50, ge=1, le=200, description="page size")) -> int:
    return limit


IDEMPOTENCY_KEY = Header(
    None,
    alias="Idempotency-Key",
    min_length=1,
    max_length=255,
    description="a retry with the same key returns the first answer and creates nothing",
)
IF_MATCH = Header(
    None, alias="If-Match", max_length=512, description="the ETag read before; a changed object answers 412"
)


class TenantOut(BaseModel):
    id: str
    name: str
    display_name: str
    created_at: dt.datetime
    updated_at: dt.datetime
    version: int


class ApiKeyOut(BaseModel):
    id: str
    tenant_id: str | None
    name: str
    role: str
    scopes: list[str]
    prefix: str = Field(description="the first characters of the key, safe to show")
    created_by_key_id: str | None
    created_at: dt.datetime
    expires_at: dt.datetime | None
    revoked_at: dt.datetime | None
    description: str = ""
    last_used_at: dt.datetime | None = Field(None, description="to the minute (written at most once a minute)")
    last_used_address: str | None = None


class ApiKeyCreated(ApiKeyOut):
    secret: str = Field(description="the key itself; shown once, never stored")


class ClusterStatus(BaseModel):
    phase: str
    conditions: list[dict[str, Any]]
    phase_history: list[dict[str, Any]]
    events: list[dict[str, Any]]


class ClusterOut(BaseModel):
    id: str
    tenant_id: str
    name: str
    region: str
    node_type: str
    node_count: int
    desired_state: str
    spec: dict[str, Any]
    plan: dict[str, Any]
    status: ClusterStatus
    created_at: dt.datetime
    updated_at: dt.datetime
    version: int


class NodeOut(BaseModel):
    id: str
    name: str
    region: str
    node_type: str
    tenant_id: str | None
    cluster_id: str | None
    provisioning_state: str
    fleet_stage: str
    hardware: dict[str, Any]
    labels: dict[str, Any]
    last_error: str | None
    created_at: dt.datetime
    updated_at: dt.datetime
    version: int


class VolumeOut(BaseModel):
    id: str
    tenant_id: str
    name: str
    region: str
    tier: str
    size_tb: float
    forbid_deletion: bool
    cluster_id: str | None
    state: str
    created_at: dt.datetime
    updated_at: dt.datetime
    version: int


class RegionCapacity(BaseModel):
    node_type: str
    total_nodes: int
    spare_nodes: int = Field(description="held back for replacements: ceil(total x the region's spare fraction)")
    in_use_nodes: int = Field(description="nodes in clusters: the caller's own (tenant keys), all (provider keys)")
    available_nodes: int = Field(description="free production nodes less spares and nodes promised to clusters")
    nodes_by_state: dict[str, int] = Field(
        default_factory=dict, description="provider keys: nodes per fleet stage and provisioning state"
    )


class RegionOut(BaseModel):
    name: str
    description: str
    scalable_unit_nodes: int
    spare_fraction: float
    capacity: list[RegionCapacity]


class AuditEventOut(BaseModel):
    id: str
    at: dt.datetime
    actor: str
    key_id: str | None
    tenant_id: str | None
    action: str
    target: str
    request_id: str
    source_address: str | None
    outcome: str
    status_code: int
    error_code: str | None
    detail: dict[str, Any]


class Health(BaseModel):
    status: str
    database: str | None = None
    schema_revision: str | None = None
