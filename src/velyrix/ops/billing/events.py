"""Usage events in the CloudEvents 1.0 shape, made from the state history.

- ``com.velyrix.usage.gpu.v1``: one node allocated to a cluster, from allocation to release (or the end
  of the month): ``data.gpu_minutes`` = GPUs x whole minutes.
- ``com.velyrix.usage.storage.v1``: one volume at one size, from creation (or resize) to deletion (or
  the next resize, or the end of the month): ``data.tb_minutes`` = decimal TB x whole minutes.

Times are truncated to the whole minute. An interval that spans months is cut at the month boundary, so
each event belongs to exactly one month. Event ids are a hash of what they describe: generating the
events again yields the same ids, and ingestion (``velyrix.ops.billing.ledger``) keeps one per
(source, id). A meter is the sum of its events' data, nothing else (``velyrix.ops.billing.meters``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

SOURCE = "/velyrix/metering"
GPU = "com.velyrix.usage.gpu.v1"
STORAGE = "com.velyrix.usage.storage.v1"
TYPES = (GPU, STORAGE)


@dataclass(frozen=True)
class NodeInterval:
    """A node allocated to a tenant's cluster over ``[start, end)`` (``end`` None: still allocated)."""

    node: str
    node_type: str
    gpus: int
    tenant_id: str
    cluster_id: str
    start: dt.datetime
    end: dt.datetime | None


@dataclass(frozen=True)
class VolumeInterval:
    """A volume of ``tier`` at ``size_tb`` (decimal TB, as a string: exact) over ``[start, end)``."""

    volume: str
    tier: str
    size_tb: str
    tenant_id: str
    cluster_id: str | None
    start: dt.datetime
    end: dt.datetime | None


def month_bounds(month: str) -> tuple[dt.datetime, dt.datetime]:
    """``'2026-11'`` -> (2026-11-01T00:00Z, 2026-12-01T00:00Z)."""
    year, mon = (int(p) for p in month.split("-"))
    start = dt.datetime(year, mon, 1, tzinfo=dt.UTC)
    end = dt.datetime(year + (mon == 12), mon % 12 + 1, 1, tzinfo=dt.UTC)
    return start, end


def _minute(t: dt.datetime) -> dt.datetime:
    return t.replace(second=0, microsecond=0)


def _clip(start: dt.datetime, end: dt.datetime | None, month: str) -> tuple[dt.datetime, dt.datetime, int] | None:
    lo, hi = month_bounds(month)
    a, b = max(_minute(start), lo), min(_minute(end) if end else hi, hi)
    minutes = int((b - a).total_seconds() // 60)
    return (a, b, minutes) if minutes > 0 else None


def _event(kind: str, subject: str, tenant_id: str, a: dt.datetime, data: dict[str, Any]) -> dict[str, Any]:
    ident = hashlib.sha256(f"{kind}|{subject}|{a.isoformat()}|{data['end']}".encode()).hexdigest()[:32]
    return {
        "specversion": "1.0",
        "id": ident,
        "source": SOURCE,
        "type": kind,
        "subject": subject,
        "time": a.isoformat(),
        "datacontenttype": "application/json",
        "tenant": tenant_id,
        "data": data,
    }


def gpu_events(intervals: list[NodeInterval], month: str) -> Iterator[dict[str, Any]]:
    """The GPU usage events of ``month``, one per node interval that overlaps it."""
    for iv in intervals:
        clipped = _clip(iv.start, iv.end, month)
        if clipped is None:
            continue
        a, b, minutes = clipped
        data = {
            "tenant_id": iv.tenant_id,
            "cluster_id": iv.cluster_id,
            "node": iv.node,
            "node_type": iv.node_type,
            "gpus": iv.gpus,
            "start": a.isoformat(),
            "end": b.isoformat(),
            "gpu_minutes": iv.gpus * minutes,
        }
        yield _event(GPU, f"nodes/{iv.node}", iv.tenant_id, a, data)


def storage_events(intervals: list[VolumeInterval], month: str) -> Iterator[dict[str, Any]]:
    """The storage usage events of ``month``, one per volume interval that overlaps it."""
    from decimal import Decimal

    for iv in intervals:
        clipped = _clip(iv.start, iv.end, month)
        if clipped is None:
            continue
        a, b, minutes = clipped
        data = {
            "tenant_id": iv.tenant_id,
            "cluster_id": iv.cluster_id,
            "volume": iv.volume,
            "tier": iv.tier,
            "size_tb": iv.size_tb,
            "start": a.isoformat(),
            "end": b.isoformat(),
            "tb_minutes": str(Decimal(iv.size_tb) * minutes),
        }
        yield _event(STORAGE, f"volumes/{iv.volume}", iv.tenant_id, a, data)
