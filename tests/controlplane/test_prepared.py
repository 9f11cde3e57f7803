"""Statements run on the bare SQLite or psycopg connection (``db/prepared.py``, the API's inline reads)
give the rows SQLAlchemy's ``execute`` gives: the same values of the same types (datetimes parsed, JSON
decoded or kept as text, NULLs), attribute access by column name, the statement's own bound values (a
LIMIT)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.controlplane import cluster_rows


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'v.db'}"
    return str(request.getfixturevalue("pg_server").create_database(f"prep{tmp_path.name[-12:].replace('-', '')}"))


def _database(url: str) -> tuple[sa.Engine, str]:
    from velyrix.controlplane import specs
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import engine as engine_mod
    from velyrix.controlplane.db import migrate, models

    migrate.upgrade(url)
    engine = engine_mod.make_engine(url)
    with sa.orm.Session(engine) as s:
        tenant = models.Tenant(name="acme", display_name="Acme")
        s.add(tenant)
        s.flush()
        principals.issue_key(s, tenant_id=tenant.id, name="k", role="viewer")
        spec = specs.validate(
            specs.ClusterSpecBody(
                name="c1",
                region="us-east-1",
                node_type="hgx-h200-8g",
                node_count=2,
                fabric="infiniband-ndr",
                scheduler="slurm",
                storage={"parallel_fs_tb": 80},
            )
        )
        for name in ("c1", "c2", "c3"):
            cluster = cluster_rows.pending_cluster(tenant.id, spec, name)
            s.add(cluster)
        s.add(models.Volume(tenant_id=tenant.id, name="v1", region="us-east-1", tier="block", size_tb=1.5))
        s.commit()
        return engine, tenant.id


def test_prepared_reads_give_the_rows_of_sqlalchemy(url: str) -> None:
    from velyrix.controlplane import scoping
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models, prepared
    from velyrix.controlplane.identity import sessions

    engine, tenant_id = _database(url)
    try:
        with engine.connect() as conn:
            dbapi = conn.connection.dbapi_connection
            cluster_id = conn.execute(sa.select(models.Cluster.id).order_by(models.Cluster.id)).scalars().first()
            digest = conn.execute(sa.select(models.ApiKey.secret_sha256)).scalar_one()
            cases: list[tuple[Any, dict[str, Any]]] = [
                (scoping._read_statement(models.Cluster, False, True), {"obj_id": cluster_id, "tenant": tenant_id}),
                (scoping._read_statement(models.Cluster, False, False), {"obj_id": cluster_id, "tenant": tenant_id}),
                (scoping._read_statement(models.Cluster, True, True), {"obj_id": cluster_id, "tenant": None}),
                (
                    scoping._columns_statement(models.Cluster, ("name", "region", "phase"), False, 2),
                    {"tenant": tenant_id},
                ),
                (principals._BY_DIGEST, {"digest": digest}),
            ]
            assert prepared.prepare(sessions._BY_SECRET, conn.dialect) is not None  # the other lookup
            volume_id = conn.execute(sa.select(models.Volume.id)).scalar_one()
            cases.insert(0, (scoping._read_statement(models.Volume, False), {"obj_id": volume_id, "tenant": tenant_id}))
            for stmt, params in cases:
                fast = prepared.prepare(stmt, conn.dialect)
                assert fast is not None and prepared.prepare(stmt, conn.dialect) is fast
                expected = list(conn.execute(stmt, params))
                got = fast.all(dbapi, params)
                assert [tuple(r) for r in got] == [tuple(r) for r in expected]
                assert [type(v) for v in got[0]] == [type(v) for v in expected[0]]
                for name in stmt.selected_columns.keys():
                    assert getattr(got[0], name) == getattr(expected[0], name)
                assert fast.first(dbapi, params) == got[0]
            assert len(got) == 1 and isinstance(got[0].scopes, list) and got[0].revoked_at is None
            assert isinstance(fast.first(dbapi, {"digest": digest}).expires_at, dt.datetime | type(None))
            assert fast.first(dbapi, {"digest": "0" * 64}) is None
            listed = prepared.prepare(cases[4][0], conn.dialect)
            assert listed is not None and len(listed.all(dbapi, cases[4][1])) == 2  # the LIMIT bound in it
            read = prepared.prepare(cases[1][0], conn.dialect)
            assert read is not None and isinstance(read.first(dbapi, cases[1][1]).created_at, dt.datetime)
    finally:
        engine.dispose()


def test_statements_it_cannot_run_are_left_to_sqlalchemy(tmp_path: Path) -> None:
    from velyrix.controlplane.db import models, prepared

    engine, _ = _database(f"sqlite:///{tmp_path / 'v.db'}")
    try:
        expanding = sa.select(models.Cluster.id).where(models.Cluster.name.in_(sa.bindparam("names", expanding=True)))
        assert prepared.prepare(expanding, engine.dialect) is None
        from sqlalchemy.dialects.postgresql import psycopg2

        other_driver = psycopg2.dialect()  # not the driver the API reads PostgreSQL through
        assert prepared.prepare(sa.select(models.Cluster.id), other_driver) is None
    finally:
        engine.dispose()
