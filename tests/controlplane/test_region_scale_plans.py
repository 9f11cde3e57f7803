"""A tenant's GETs stay bounded as the region grows (issue 14, ``bench/bench_region_scale.py``): every SELECT
that ``GET /v1/clusters/{id}``, ``GET /v1/clusters`` and ``GET /v1/nodes`` issue for a tenant key, the
authentication included, reads the big tables (nodes, clusters, tenants, API keys, node transitions) through
an index, never a full scan, on a region far bigger than the tenant's share (SQLite's own query plans, without
ANALYZE, as a fresh database runs)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from velyrix.controlplane import db, specs, status
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models

BIG = ("nodes", "clusters", "tenants", "api_keys", "node_transitions", "audit_events")


def _seed(url: str) -> tuple[str, str]:
    """300 production nodes, 40 tenants with two clusters of 3 nodes each; returns one tenant's key and cluster."""
    engine = db.make_engine(url)
    db.upgrade(url=url, engine=engine)
    out: tuple[str, str] = ("", "")
    with sa.orm.Session(engine) as s:
        s.add_all(
            models.Node(
                name=f"n{i:04d}",
                region="us-east-1",
                node_type="hgx-h200-8g",
                provisioning_state="available",
                fleet_stage="production",
                hardware={},
                labels={},
            )
            for i in range(300)
        )
        s.flush()
        free = list(s.scalars(sa.select(models.Node.id).order_by(models.Node.name)))
        for t in range(40):
            tenant = models.Tenant(name=f"t{t:03d}", display_name=f"T{t}")
            s.add(tenant)
            s.flush()
            _, key = principals.issue_key(s, tenant_id=tenant.id, name="owner", role="owner")
            for j in range(2):
                spec = specs.validate(
                    specs.ClusterSpecBody(
                        name=f"c{j}",
                        region="us-east-1",
                        node_type="hgx-h200-8g",
                        node_count=3,
                        fabric="infiniband-ndr",
                        scheduler="slurm",
                        storage={"parallel_fs_tb": 100},
                    )
                )
                c = models.Cluster(
                    tenant_id=tenant.id,
                    name=spec.name,
                    region=spec.region,
                    node_type=spec.node_type,
                    node_count=3,
                    spec=specs.to_body(spec),
                    plan={},
                    conditions=[],
                    phase_history=[],
                    events=[],
                )
                status.set_phase(c, "Pending", actor="test", reason="declared")
                s.add(c)
                s.flush()
                mine, free = free[:3], free[3:]
                s.execute(
                    sa.update(models.Node)
                    .where(models.Node.id.in_(mine))
                    .values(cluster_id=c.id, tenant_id=tenant.id, provisioning_state="active")
                )
                if t == 20:
                    out = (key, c.id)
        s.commit()
    engine.dispose()
    return out


@pytest.fixture()
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any]]]:
    """Every statement any engine of this process runs while the test runs, and every statement run
    prepared on the API's inline connection (``db/prepared.py``, no engine events): (SQL, parameters)."""
    from velyrix.controlplane.db import prepared

    seen: list[tuple[str, Any]] = []

    def remember(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if not executemany:
            seen.append((statement, parameters))

    def recorded(run: Any) -> Any:
        def run_and_remember(self: Any, dbapi: Any, params: Any) -> Any:
            seen.append((self.sql, tuple(self.arguments(params))))
            return run(self, dbapi, params)

        return run_and_remember

    monkeypatch.setattr(prepared.Prepared, "first", recorded(prepared.Prepared.first))
    monkeypatch.setattr(prepared.Prepared, "all", recorded(prepared.Prepared.all))
    sa.event.listen(sa.Engine, "before_cursor_execute", remember)
    yield seen
    sa.event.remove(sa.Engine, "before_cursor_execute", remember)


def _full_scans(path: Path, sql: str, params: Any) -> list[str]:
    """The lines of SQLite's plan of ``sql`` that scan one of ``BIG`` whole (no index search)."""
    with sqlite3.connect(path) as conn:
        plan = conn.execute(f"EXPLAIN QUERY PLAN {sql}", params or ()).fetchall()
    lines = [str(row[-1]) for row in plan]
    return [line for line in lines if line.startswith("SCAN ") and line.split()[1] in BIG]


def test_a_tenant_s_gets_read_the_region_s_tables_through_indexes(
    tmp_path: Path, statements: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    path = tmp_path / "velyrix.db"
    url = f"sqlite:///{path}"
    key, cluster_id = _seed(url)
    from velyrix.ops.service import create_app

    headers = {"Authorization": f"Bearer {key}"}
    with TestClient(create_app(url)) as client:
        statements.clear()
        for route in (f"/v1/clusters/{cluster_id}", "/v1/clusters?limit=20", "/v1/nodes?limit=20"):
            r = client.get(route, headers=headers)
            assert r.status_code == 200, r.text
        assert len(client.get("/v1/nodes?limit=20", headers=headers).json()["items"]) == 6  # the tenant's own
    selects = [(sql, p) for sql, p in statements if sql.lstrip().upper().startswith("SELECT")]
    tables_read = {t for sql, _ in selects for t in BIG if f"FROM {t}" in sql or f"JOIN {t}" in sql}
    assert {"nodes", "clusters"} <= tables_read  # the routes' own reads were seen
    scans = {sql: found for sql, p in selects if (found := _full_scans(path, sql, p))}
    assert not scans, scans
