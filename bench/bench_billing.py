"""Metering, invoicing and SLA credits of one month of a 12,500-node region with 2,000 tenants.

Builds a SQLite control-plane database (bulk inserts: 2,000 tenants, 2,000 clusters, 12,500 nodes
allocated before the month, 1 in 50 nodes quarantined for 12 h in it, a volume per tenant), then times
``ledger.close_month`` (usage events from the state history, idempotent ingestion, meters, 2,000 invoices,
SLA availability per cluster and the credit notes) and a replay of the meters from the stored events.
Target: under 60 s on the 2-core VM (docs/benchmarks.md).
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

TENANTS = 2_000
NODES = 12_500
MONTH = "2026-11"


def build(url: str) -> None:
    from velyrix.controlplane.db import migrate, models
    from velyrix.controlplane.db.models import noc as models_noc

    migrate.upgrade(url)
    eng = sa.create_engine(url)
    t0 = dt.datetime(2026, 10, 20, tzinfo=dt.UTC)
    tenants = [
        {
            "id": f"ten_{i:024x}",
            "name": f"t{i}",
            "display_name": f"T{i}",
            "created_at": t0,
            "updated_at": t0,
            "version": 1,
        }
        for i in range(TENANTS)
    ]
    clusters, nodes, allocs, moves, segs = [], [], [], [], []
    per = [NODES // TENANTS + (1 if i < NODES % TENANTS else 0) for i in range(TENANTS)]
    n = 0
    for i, count in enumerate(per):
        cid = f"clu_{i:024x}"
        clusters.append(
            {
                "id": cid,
                "tenant_id": tenants[i]["id"],
                "name": f"c{i}",
                "region": "us-east-1",
                "node_type": "hgx-h200-8g",
                "node_count": count,
                "spec": {},
                "plan": {},
                "desired_state": "present",
                "phase": "Ready",
                "conditions": [],
                "phase_history": [],
                "events": [],
                "created_at": t0,
                "updated_at": t0,
                "version": 1,
            }
        )
        segs.append(
            {
                "id": f"vsg_{i:024x}",
                "volume_id": f"vol_{i:024x}",
                "tenant_id": tenants[i]["id"],
                "cluster_id": cid,
                "tier": "parallel_fs",
                "size_tb": "100",
                "starts_at": t0,
                "ends_at": None,
            }
        )
        for _ in range(count):
            nid = f"node_{n:024x}"
            nodes.append(
                {
                    "id": nid,
                    "name": f"gpu-{n:05d}",
                    "region": "us-east-1",
                    "node_type": "hgx-h200-8g",
                    "tenant_id": tenants[i]["id"],
                    "cluster_id": cid,
                    "provisioning_state": "active",
                    "fleet_stage": "production",
                    "hardware": {},
                    "labels": {},
                    "created_at": t0,
                    "updated_at": t0,
                    "version": 1,
                }
            )
            allocs.append(
                {
                    "id": f"nal_{n:024x}",
                    "node_id": nid,
                    "node_name": f"gpu-{n:05d}",
                    "node_type": "hgx-h200-8g",
                    "tenant_id": tenants[i]["id"],
                    "cluster_id": cid,
                    "allocated_at": t0,
                    "released_at": None,
                }
            )
            steps = [
                ("provisioning_state", "enrolled", "inspecting", t0),
                ("provisioning_state", "inspecting", "available", t0),
                ("fleet_stage", "burn-in", "production", t0),
                ("provisioning_state", "available", "allocated", t0),
                ("provisioning_state", "allocated", "provisioning", t0),
                ("provisioning_state", "provisioning", "active", t0),
            ]
            if n % 50 == 0:
                down = dt.datetime(2026, 11, 1 + n % 28, tzinfo=dt.UTC)
                steps += [
                    ("fleet_stage", "production", "quarantined", down),
                    ("fleet_stage", "quarantined", "production", down + dt.timedelta(hours=12)),
                ]
            for k, (field, a, b, at) in enumerate(steps):
                moves.append(
                    {
                        "id": f"ntr_{n:020x}{k:04x}",
                        "node_id": nid,
                        "field": field,
                        "from_state": a,
                        "to_state": b,
                        "actor": "bench",
                        "reason": "bench",
                        "at": at,
                    }
                )
            n += 1
    with eng.begin() as conn:
        for table, rows in (
            (models.Tenant, tenants),
            (models.Cluster, clusters),
            (models.Node, nodes),
            (models_noc.NodeAllocation, allocs),
            (models.NodeTransition, moves),
            (models_noc.VolumeSegment, segs),
        ):
            conn.execute(sa.insert(table), rows)
    eng.dispose()


def main() -> None:
    from velyrix.controlplane import audit
    from velyrix.controlplane.db import engine as engine_mod
    from velyrix.ops.billing import ledger, meters

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'bench.db'}"
        start = time.perf_counter()
        build(url)
        print(f"built {TENANTS} tenants, {NODES} nodes: {time.perf_counter() - start:.1f} s")
        eng = engine_mod.make_engine(url)
        from sqlalchemy import orm

        info = audit.RequestInfo("bench", None, "BENCH", "/bench")
        with orm.Session(eng) as s:
            start = time.perf_counter()
            summary = ledger.close_month(s, MONTH, info=info, principal=None)
            s.commit()
            close_s = time.perf_counter() - start
            start = time.perf_counter()
            replay = meters.aggregate(ledger.stored_events(s, MONTH))
            replay_s = time.perf_counter() - start
        eng.dispose()
        print(
            f"close {MONTH}: {len(summary['invoices'])} invoices, {len(summary['credit_notes'])} credit notes, "
            f"{summary['usage_events_new']} usage events: {close_s:.1f} s (target < 60 s)"
        )
        print(f"meters replayed from the stored events: {len(replay)} meters in {replay_s:.1f} s")
