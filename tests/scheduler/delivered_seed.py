"""A delivered cluster written to the control plane's tables as ``velyrix up`` and an apply leave it
(tenant ``acme`` with id ``t1``, its cluster ``c1`` Ready, nodes ``n0``.. allocated to it): what the
scheduler's config, the workload simulator and the reboot rung read (tests/scheduler/test_delivered.py,
tests/workload/test_cli.py, tests/reconcile/test_reboot_to_scheduler.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import orm

FABRIC = {"fabric": "infiniband-ndr"}


def migrated(url: str) -> orm.Session:
    """A session on the database at ``url``, brought to the head migration first."""
    from velyrix.controlplane.db import engine, migrate

    migrate.upgrade(url)
    return orm.Session(engine.make_engine(url))


def add_delivered(
    s: orm.Session, name: str, node_names: Sequence[str], spec: dict[str, Any] | None = None, **node: Any
) -> list[Any]:
    """Tenant t1 (acme), its Ready cluster c1 called ``name`` (``spec``: the cluster's spec, default the
    InfiniBand fabric) and one H200 node in us-east-1 per name (ids n0, n1, ...; ``node``: more columns
    of each), flushed, not committed; returns the nodes."""
    from velyrix.controlplane.db import models

    s.add(models.Tenant(id="t1", name="acme"))
    s.flush()
    s.add(
        models.Cluster(
            id="c1",
            tenant_id="t1",
            name=name,
            region="us-east-1",
            node_type="hgx-h200-8g",
            node_count=len(node_names),
            spec=FABRIC if spec is None else spec,
            plan={},
            phase="Ready",
        )
    )
    s.flush()
    nodes = [
        models.Node(
            id=f"n{i}",
            name=node_name,
            region="us-east-1",
            node_type="hgx-h200-8g",
            tenant_id="t1",
            cluster_id="c1",
            **node,
        )
        for i, node_name in enumerate(node_names)
    ]
    s.add_all(nodes)
    s.flush()
    return nodes
