"""The API's rollout body: ``RolloutSpec`` as JSON, with every cross-field rule stated in its schema
(component and version pairs from the catalog, a target that is a node type or clusters, the stage orders
allowed, a canary block exactly when "canary" is a stage), so that data fitting the schema is accepted and
``declarations.rollout.from_dict`` (the same checks as the HCL loader) never refuses it."""

from __future__ import annotations

import functools
import zoneinfo
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from velyrix import catalog
from velyrix.catalog import versions
from velyrix.controlplane.api import schemas
from velyrix.declarations import rollout as decl

SHARE = r"^([1-9][0-9]?(\.[0-9]{1,3})?|100)%$"
DURATION = (
    r"^([0-9]{1,3}d([0-9]{1,3}h)?([0-9]{1,4}m)?([0-9]{1,5}s)?|[0-9]{1,3}h([0-9]{1,4}m)?([0-9]{1,5}s)?"
    r"|[0-9]{1,4}m([0-9]{1,5}s)?|[0-9]{1,5}s)$"
)
STAGE_ORDERS = [list(o) for o in (decl.STAGES, ("staging", "production"), ("canary", "production"), ("production",))]
CROSS_FIELD_RULES = (
    "version is a known version of component (catalog/data/versions.toml)",
    "target names node_type or clusters, exactly one",
    'canary is given exactly when stages hold "canary"',
)


@functools.cache
def time_zones() -> list[str]:
    """IANA time zones this machine can load (the window's ``timezone`` enum)."""
    out = []
    for name in sorted(zoneinfo.available_timezones()):
        try:
            zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            continue
        out.append(name)
    return out


def component_versions() -> dict[str, Any]:
    return {
        "anyOf": [
            {"properties": {"component": {"const": c}, "version": {"enum": list(versions.component(c).versions)}}}
            for c in versions.component_names()
        ]
    }


def _canary_rule() -> dict[str, Any]:
    with_canary = [o for o in STAGE_ORDERS if "canary" in o]
    without = [o for o in STAGE_ORDERS if "canary" not in o]
    return {
        "anyOf": [
            {"required": ["canary"], "properties": {"stages": {"enum": with_canary}, "canary": {"type": "object"}}},
            {"required": ["stages"], "properties": {"stages": {"enum": without}, "canary": {"type": "null"}}},
        ]
    }


Gate = Literal["acceptance", "no_new_xids", "all_reduce_baseline"]


def _all_gates() -> list[Gate]:
    return ["acceptance", "no_new_xids", "all_reduce_baseline"]


class TargetBody(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {
                    "required": ["node_type"],
                    "properties": {"node_type": {"type": "string"}, "clusters": {"type": "null"}},
                },
                {
                    "required": ["clusters"],
                    "properties": {"clusters": {"type": "array"}, "node_type": {"type": "null"}},
                },
            ]
        },
    )
    node_type: str | None = Field(None, max_length=63, json_schema_extra=schemas.one_of(catalog.node_type_names()))
    clusters: list[str] | None = Field(
        None,
        min_length=1,
        max_length=64,
        json_schema_extra={"items": {"type": "string", "maxLength": 63, "pattern": r"^[a-z0-9][a-z0-9-]{0,62}$"}},
    )


class CanaryBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nodes: int = Field(ge=1, le=64, description="nodes in the canary")
    soak: str = Field("0s", max_length=24, pattern=DURATION, description='soak time such as "2h" or "1h30m"')


class WindowBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    days: list[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]] = Field(min_length=1, max_length=7)
    start: str = Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$", description='local time "HH:MM"')
    hours: int = Field(ge=1, le=24)
    timezone: str = Field("UTC", max_length=64, json_schema_extra=schemas.one_of(time_zones()))


class RolloutBody(BaseModel):
    """A rollout, as ``velyrix rollout apply`` sends it (the HCL resource as JSON)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "description": "A staged rollout. Rules across fields: " + "; ".join(CROSS_FIELD_RULES) + ".",
            "allOf": [component_versions(), _canary_rule()],
        },
    )
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")
    region: str = Field(max_length=63, json_schema_extra=schemas.one_of(catalog.region_names()))
    component: str = Field(max_length=63, json_schema_extra=schemas.one_of(versions.component_names()))
    version: str = Field(max_length=63)
    target: TargetBody
    stages: list[str] = Field(json_schema_extra=schemas.one_of(STAGE_ORDERS))
    staging_nodes: int = Field(4, ge=1, le=64)
    canary: CanaryBody | None = None
    max_unavailable: int | str = Field(
        "10%",
        json_schema_extra={
            "anyOf": [{"type": "integer", "minimum": 1, "maximum": 100000}, {"type": "string", "pattern": SHARE}]
        },
    )
    max_unavailable_per_cluster: int | str | None = Field(
        None,
        json_schema_extra={
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": 100000},
                {"type": "string", "pattern": SHARE},
                {"type": "null"},
            ]
        },
    )
    max_unavailable_per_su: int | str | None = Field(
        None,
        json_schema_extra={
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": 100000},
                {"type": "string", "pattern": SHARE},
                {"type": "null"},
            ]
        },
    )
    window: WindowBody
    notice_hours: int = Field(72, ge=0, le=2160)
    gates: list[Gate] = Field(default_factory=_all_gates, max_length=3)
    rollback: Literal["automatic", "manual"] = "automatic"
    failed_node_limit: int = Field(0, ge=0, le=100)
    notify: list[str] = Field(
        default_factory=list,
        max_length=8,
        json_schema_extra={
            "items": {"type": "string", "maxLength": 512, "pattern": r"^(email|webhook|pagerduty):[!-~]+$"}
        },
    )

    def raw(self) -> dict[str, Any]:
        """The plain data ``declarations.rollout.from_dict`` takes."""
        out: dict[str, Any] = self.model_dump(exclude={"target", "canary", "window"})
        out["target_node_type"] = self.target.node_type
        out["target_clusters"] = list(self.target.clusters or [])
        out["canary_nodes"] = self.canary.nodes if self.canary else 0
        out["canary_soak_s"] = decl.duration_s(self.canary.soak) if self.canary else 0.0
        out["window"] = self.window.model_dump()
        return out


def body_of(spec: decl.RolloutSpec) -> dict[str, Any]:
    """The API body of ``spec`` (what the CLI sends)."""
    raw = spec.to_dict()
    body = {
        k: v
        for k, v in raw.items()
        if k not in ("target_node_type", "target_clusters", "canary_nodes", "canary_soak_s")
    }
    body["target"] = (
        {"node_type": spec.target_node_type} if spec.target_node_type else {"clusters": list(spec.target_clusters)}
    )
    if spec.canary_nodes:
        body["canary"] = {"nodes": spec.canary_nodes, "soak": f"{int(spec.canary_soak_s)}s"}
    return body
