"""Metering: volumes changed through the API leave their size history; usage events are CloudEvents,
ingested once however often they are generated; meters recomputed from the events alone match."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.controlplane.conftest import World, auth
from velyrix.ops.billing import events, invoices, meters, money


def test_volume_create_resize_delete_leaves_its_segments(client: Any, world: World) -> None:
    key = world.a.keys["owner"]
    body = {"name": "metered", "region": "us-east-1", "tier": "parallel_fs", "size_tb": 10}
    vol = client.post("/v1/volumes", json=body, headers=auth(key)).json()
    assert client.patch(f"/v1/volumes/{vol['id']}", json={"size_tb": 25}, headers=auth(key)).status_code == 200
    assert client.delete(f"/v1/volumes/{vol['id']}", headers=auth(key)).status_code == 204
    from velyrix.controlplane.db.models import noc as models_noc

    with world.session() as s:
        segs = (
            s.query(models_noc.VolumeSegment)
            .filter_by(volume_id=vol["id"])
            .order_by(models_noc.VolumeSegment.starts_at)
            .all()
        )
    assert [(g.size_tb, g.ends_at is not None, g.tenant_id) for g in segs] == [
        ("10.0", True, world.a.tenant_id),
        ("25.0", True, world.a.tenant_id),
    ]


def test_usage_events_are_cloudevents_ingested_once(client: Any, world: World) -> None:
    from velyrix.controlplane.db.models import noc as models_noc
    from velyrix.ops.billing import ledger

    with world.session() as s:
        s.add(
            models_noc.VolumeSegment(
                volume_id="vol_x",
                tenant_id=world.a.tenant_id,
                tier="object",
                size_tb="3",
                starts_at=dt.datetime(2026, 10, 31, 12, tzinfo=dt.UTC),
                ends_at=dt.datetime(2026, 11, 2, tzinfo=dt.UTC),
            )
        )
        s.flush()
        batch = ledger.usage_events(s, "2026-11")
        mine = [e for e in batch if e["subject"] == "volumes/vol_x"]
        assert [e["data"]["tb_minutes"] for e in mine] == [str(3 * 1440)]  # cut at the month boundary
        assert {"specversion", "id", "source", "type", "time", "data"} <= set(mine[0])
        assert ledger.ingest(s, batch) == len(batch) and ledger.ingest(s, ledger.usage_events(s, "2026-11")) == 0
        s.rollback()


intervals = st.lists(
    st.tuples(st.integers(0, 60 * 24 * 40), st.integers(1, 60 * 24 * 20), st.sampled_from(["c1", "c2"])), max_size=30
)


@settings(max_examples=60, deadline=None)
@given(intervals)
def test_invoice_total_is_the_sum_of_its_lines_and_meters_replay(ivs: list[tuple[int, int, str]]) -> None:
    base = dt.datetime(2026, 10, 20, tzinfo=dt.UTC)
    nodes = [
        events.NodeInterval(
            f"n{i}", "hgx-h100-8g", 8, "t", c, base + dt.timedelta(minutes=a), base + dt.timedelta(minutes=a + d)
        )
        for i, (a, d, c) in enumerate(ivs)
    ]
    evs = list(events.gpu_events(nodes, "2026-11"))
    assert meters.aggregate(evs) == meters.aggregate(list(events.gpu_events(nodes, "2026-11")))
    doc = invoices.draft(
        "t",
        "2026-11",
        meters.aggregate(evs),
        gpu_price=lambda _: Decimal("2.85"),
        tier_price=lambda _: Decimal(0),
        credits=[invoices.OpenCredit("c", "CN-1", Decimal("100.00"))],
    )
    assert doc.subtotal == sum((ln.amount for ln in doc.lines), Decimal(0))
    assert all(ln.amount == money.cents(ln.amount) for ln in doc.lines)
    assert doc.total == doc.subtotal - min(doc.subtotal, Decimal("100.00")) and doc.total >= 0
