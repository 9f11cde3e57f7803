"""Migration 0015: the per-node reconcile work of a database built before it (the ``cluster_work.nodes`` JSON
column, entries of every age) is carried over into one ``cluster_work_nodes`` row per node, with the count
of nodes leaving, on SQLite and PostgreSQL; downgrading puts the same entries back into the column."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import orm

from velyrix.controlplane.db import engine, migrate, models
from velyrix.controlplane.reconcile import cluster as cluster_mod
from velyrix.controlplane.reconcile import node_entry

_n = itertools.count()
_WHEN = "2026-11-30 10:00:00"
OLD = {
    "n0": {
        "schema_version": 1,
        "step": "accepted",
        "attempt": 1,
        "seq": 2,
        "results": [{"test": "gpu_burn", "passed": True}],
    },
    "n1": {"step": "storage", "attempt": 0, "release": "replaced", "failed": "acceptance failed: nccl"},
    "n2": {"step": "allocated", "attempt": 0},  # the oldest entries had no seq
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'old.db'}"
    return str(request.getfixturevalue("pg_server").create_database(f"workmig{next(_n)}"))


def _seed(conn: sa.Connection, cluster_id: str, nodes: dict[str, object]) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO clusters (id, tenant_id, name, region, node_type, node_count, spec, plan, desired_state,"
            " phase, conditions, phase_history, events, created_at, updated_at, version) VALUES (:id, 'ten_old',"
            " :id, 'us-east-1', 'hgx-h200-8g', 3, '{}', '{}', 'present', 'Ready', '[]', '[]', '[]', :at, :at, 1)"
        ),
        {"id": cluster_id, "at": _WHEN},
    )
    conn.execute(
        sa.text(
            "INSERT INTO cluster_work (id, cluster_id, spec_digest, generation, nodes, replacements, cluster_results,"
            " network, retries, delete_volumes, phase_started_at, updated_at, version) VALUES (:wid, :id, '', 3,"
            " :nodes, '[]', '[]', '{}', 0, false, :at, :at, 1)"
        ),
        {"wid": f"wrk_{cluster_id}", "id": cluster_id, "nodes": json.dumps(nodes), "at": _WHEN},
    )


def test_existing_work_entries_become_rows_and_come_back_on_downgrade(old_url: str) -> None:
    eng = engine.make_engine(old_url)
    try:
        migrate.upgrade(old_url, revision="0014", engine=eng)
        with eng.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO tenants (id, name, display_name, created_at, updated_at, version)"
                    " VALUES ('ten_old', 'old', 'OLD', :at, :at, 1)"
                ),
                {"at": _WHEN},
            )
            _seed(conn, "clu_a", OLD)
            _seed(conn, "clu_b", {})
        migrate.upgrade(old_url, engine=eng)
        with orm.Session(eng) as s:
            assert node_entry.fetch(s, "clu_a") == node_entry.load(OLD)
            assert node_entry.fetch(s, "clu_b") == {}
            work = {w.cluster_id: w for w in s.scalars(sa.select(models.ClusterWork))}
            assert (work["clu_a"].releasing, work["clu_b"].releasing) == (1, 0)
            # a Ready cluster with a node on its way out still needs work after the upgrade
            a = s.get(models.Cluster, "clu_a")
            assert a is not None and cluster_mod.needs_work(a, work["clu_a"])
        cfg = migrate._config(old_url)
        with eng.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0014")
        with eng.connect() as conn:
            back = dict(conn.execute(sa.text("SELECT cluster_id, nodes FROM cluster_work")).all())
        decoded = {k: v if isinstance(v, dict) else json.loads(v) for k, v in back.items()}
        assert node_entry.load(decoded["clu_a"]) == node_entry.load(OLD) and decoded["clu_b"] == {}
    finally:
        eng.dispose()
