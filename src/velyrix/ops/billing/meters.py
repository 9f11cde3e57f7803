"""Meters: usage events summed per tenant, resource and rate. A meter is a function of the events alone
(``aggregate``), so it can be recomputed from the stored events at any time and must match."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from velyrix.ops.billing import events


@dataclass(frozen=True, order=True)
class MeterKey:
    """``kind`` ``gpu`` (resource: cluster id, rate: node type) or ``storage`` (volume, tier)."""

    tenant_id: str
    kind: str
    resource: str
    rate: str
    cluster_id: str | None


def aggregate(usage: Iterable[dict[str, Any]]) -> dict[MeterKey, Decimal]:
    """Quantities per meter: GPU-minutes (``gpu``) or decimal TB-minutes (``storage``), exact."""
    out: dict[MeterKey, Decimal] = {}
    for ev in usage:
        data = ev["data"]
        if ev["type"] == events.GPU:
            key = MeterKey(data["tenant_id"], "gpu", data["cluster_id"], data["node_type"], data["cluster_id"])
            qty = Decimal(int(data["gpu_minutes"]))
        elif ev["type"] == events.STORAGE:
            key = MeterKey(data["tenant_id"], "storage", data["volume"], data["tier"], data.get("cluster_id"))
            qty = Decimal(data["tb_minutes"])
        else:
            continue
        out[key] = out.get(key, Decimal(0)) + qty
    return out
