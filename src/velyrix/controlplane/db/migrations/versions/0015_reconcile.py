"""Reconcile work per node: the ``cluster_work.nodes`` JSON column becomes one ``cluster_work_nodes`` row per
node (existing entries carried over), ``cluster_work.releasing`` counts the nodes on their way out,
``cluster_work.settled_version`` remembers the cluster version last found settled, and two
indexes on ``nodes`` let the settled-cluster check find a cluster's nodes out of service without a scan.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_work = sa.table("cluster_work", sa.column("cluster_id", sa.String), sa.column("nodes", sa.JSON))
_rows = sa.table(
    "cluster_work_nodes",
    sa.column("cluster_id", sa.String),
    sa.column("name", sa.String),
    sa.column("step", sa.String),
    sa.column("attempt", sa.Integer),
    sa.column("seq", sa.Integer),
    sa.column("release", sa.String),
    sa.column("failed", sa.Text),
    sa.column("results", sa.JSON),
)
_KEYS = ("step", "attempt", "seq", "release", "failed", "results")


def _row(cluster_id: str, name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """One stored entry as a row; entries without a key (schema_version 1 and older) take its default,
    as ``reconcile.node_entry.NodeEntry.from_dict`` read them."""
    results = raw.get("results")
    return {
        "cluster_id": cluster_id,
        "name": name,
        "step": str(raw.get("step", "allocated")),
        "attempt": int(raw.get("attempt", 0) or 0),
        "seq": int(raw.get("seq", 0) or 0),
        "release": raw.get("release") or None,
        "failed": raw.get("failed"),
        "results": None if results is None else list(results),
    }


def upgrade() -> None:
    op.create_table(
        "cluster_work_nodes",
        sa.Column("cluster_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("step", sa.String(length=32), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("release", sa.String(length=64), nullable=True),
        sa.Column("failed", sa.Text(), nullable=True),
        sa.Column("results", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["cluster_id"], ["clusters.id"]),
        sa.PrimaryKeyConstraint("cluster_id", "name"),
    )
    op.create_index("ix_cluster_work_nodes_release", "cluster_work_nodes", ["cluster_id", "release"])
    with op.batch_alter_table("cluster_work", schema=None) as batch_op:
        batch_op.add_column(sa.Column("releasing", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("settled_version", sa.Integer(), nullable=True))
    conn = op.get_bind()
    counts = sa.table("cluster_work", sa.column("cluster_id", sa.String), sa.column("releasing", sa.Integer))
    for cluster_id, nodes in conn.execute(sa.select(_work.c.cluster_id, _work.c.nodes)).all():
        rows = [_row(cluster_id, name, dict(raw)) for name, raw in (nodes or {}).items()]
        if rows:
            conn.execute(sa.insert(_rows), rows)
        releasing = sum(1 for r in rows if r["release"])
        conn.execute(sa.update(counts).where(counts.c.cluster_id == cluster_id).values(releasing=releasing))
    with op.batch_alter_table("cluster_work", schema=None) as batch_op:
        batch_op.drop_column("nodes")
    op.create_index("ix_nodes_cluster_stage", "nodes", ["cluster_id", "fleet_stage"])
    op.create_index("ix_nodes_cluster_state", "nodes", ["cluster_id", "provisioning_state"])


def downgrade() -> None:
    op.drop_index("ix_nodes_cluster_state", table_name="nodes")
    op.drop_index("ix_nodes_cluster_stage", table_name="nodes")
    with op.batch_alter_table("cluster_work", schema=None) as batch_op:
        batch_op.add_column(sa.Column("nodes", sa.JSON(), nullable=False, server_default=sa.text("'{}'")))
    conn = op.get_bind()
    by_cluster: dict[str, dict[str, Any]] = {}
    for row in conn.execute(sa.select(_rows)).mappings():
        entry = {"schema_version": 1, **{k: row[k] for k in _KEYS if row[k] is not None}}
        by_cluster.setdefault(row["cluster_id"], {})[row["name"]] = entry
    for cluster_id, nodes in by_cluster.items():
        conn.execute(sa.update(_work).where(_work.c.cluster_id == cluster_id).values(nodes=nodes))
    with op.batch_alter_table("cluster_work", schema=None) as batch_op:
        batch_op.drop_column("settled_version")
        batch_op.drop_column("releasing")
    op.drop_index("ix_cluster_work_nodes_release", table_name="cluster_work_nodes")
    op.drop_table("cluster_work_nodes")
