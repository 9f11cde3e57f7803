"""``POST /v1/alerts/alertmanager``: Alertmanager's webhook receiver (payload version 4). Configure the
receiver with ``http_config.authorization.credentials`` = a provider key with ``incidents:write``."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.fleet import clock
from velyrix.ops.noc import intake_views

router = APIRouter(prefix="/v1/alerts", tags=["alerts"], responses=schemas.PROBLEM_RESPONSES)
Labels = dict[str, str]
_EXTRA = ConfigDict(extra="ignore", json_schema_extra={"additionalProperties": schemas.json_value(2)})
"""Alertmanager may add fields: ignored, within the validation edge's limits (controlplane/api/edge.py)."""


class Alert(BaseModel):
    model_config = _EXTRA
    status: Literal["firing", "resolved"]
    labels: Labels = Field(default_factory=dict, max_length=64)
    annotations: Labels = Field(default_factory=dict, max_length=64)
    startsAt: str = Field("", max_length=64)
    endsAt: str = Field("", max_length=64)
    generatorURL: str = Field("", max_length=2000)
    fingerprint: str = Field("", max_length=64)


class AlertmanagerPayload(BaseModel):
    """Alertmanager's webhook body (notify/webhook, version 4)."""

    model_config = _EXTRA
    version: Literal["4"]
    groupKey: str = Field(min_length=1, max_length=1000)
    truncatedAlerts: int = Field(0, ge=0)
    status: Literal["firing", "resolved"]
    receiver: str = Field("", max_length=200)
    groupLabels: Labels = Field(default_factory=dict, max_length=64)
    commonLabels: Labels = Field(default_factory=dict, max_length=64)
    commonAnnotations: Labels = Field(default_factory=dict, max_length=64)
    externalURL: str = Field("", max_length=2000)
    alerts: list[Alert] = Field(max_length=1000)


class IntakeOut(BaseModel):
    incident: str | None = Field(description="the incident's number (INC-...), None for a resolved unknown group")
    incident_id: str | None = None
    changed: bool = Field(description="false when this delivery repeated one already taken")
    new_alerts: int


@router.post("/alertmanager", name="alerts.alertmanager", response_model=IntakeOut)
def alertmanager(body: AlertmanagerPayload, ctx: Ctx = Depends(require("incidents:write"))) -> dict[str, Any]:
    """Take one Alertmanager delivery: opens (or updates) the group's incident; repeated deliveries and
    retries change nothing; a resolved group mitigates its incident."""
    data = intake_views.alertmanager(ctx.scope, body.model_dump(), clock.now())
    ctx.audit(f"alerts/alertmanager/{data['incident'] or '-'}", detail={"changed": data["changed"]})
    ctx.commit()
    return data
