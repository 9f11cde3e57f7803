"""The per-node reconcile work entry (one row of ``cluster_work_nodes``) as a typed record.

``fetch`` reads a cluster's entries once per step; ``store`` writes back only the entries the step changed
(bulk INSERT / UPDATE / DELETE: one node's progress is one row update). ``NodeEntry.from_dict`` / ``to_dict``
are the JSON shape entries had in the ``cluster_work.nodes`` column before migration ``0015`` (entries written
before ``schema_version`` existed load as version 1); the migration reads them with ``load``. Phase
handlers replace entries (``dataclasses.replace``), never mutate them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db.models.reconcile_work import ClusterWorkNode
from velyrix.controlplane.reconcile import phases

_T = cast(sa.Table, ClusterWorkNode.__table__)
_CHUNK = 500
"""Names per ``IN (...)`` list of a bulk DELETE (well under SQLite's bound-parameter limit)."""

SCHEMA_VERSION = 1
"""Version of the stored entry; rows without the key are version 1."""


@dataclass(frozen=True)
class NodeEntry:
    """Where one node of a cluster stands in reconcile.

    ``step``: one of ``phases.STEPS``; ``attempt``: failed retryable requests so far (request ids carry it);
    ``seq``: the allocation generation the node came with (request ids carry it); ``release``: why the node
    leaves the cluster ("scale down", "replaced", "destroy"; None while it belongs); ``failed``: the reason it
    was replaced; ``results``: its acceptance summary (``report.summarize_node``), None before acceptance.
    """

    step: str = phases.STEPS[0]
    attempt: int = 0
    seq: int = 0
    release: str | None = None
    failed: str | None = None
    results: tuple[dict[str, Any], ...] | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> NodeEntry:
        """Parse a stored entry; missing keys take their defaults."""
        version = int(raw.get("schema_version", 1))
        if version > SCHEMA_VERSION:
            raise ValueError(f"node entry schema_version {version} is newer than this Velyrix ({SCHEMA_VERSION})")
        results = raw.get("results")
        return cls(
            step=str(raw.get("step", phases.STEPS[0])),
            attempt=int(raw.get("attempt", 0) or 0),
            seq=int(raw.get("seq", 0) or 0),
            release=raw.get("release") or None,
            failed=raw.get("failed"),
            results=None if results is None else tuple(dict(r) for r in results),
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON: unset optional keys are left out, as entries were always stored."""
        out: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "step": self.step,
            "attempt": self.attempt,
            "seq": self.seq,
        }
        if self.release is not None:
            out["release"] = self.release
        if self.failed is not None:
            out["failed"] = self.failed
        if self.results is not None:
            out["results"] = [dict(r) for r in self.results]
        return out


def load(stored: Mapping[str, Mapping[str, Any]] | None) -> dict[str, NodeEntry]:
    """Every entry of a ``cluster_work.nodes`` column, by node name."""
    return {name: NodeEntry.from_dict(raw) for name, raw in (stored or {}).items()}


def dump(entries: Mapping[str, NodeEntry]) -> dict[str, dict[str, Any]]:
    """The ``cluster_work.nodes`` column for ``entries``."""
    return {name: entry.to_dict() for name, entry in entries.items()}


def _from_row(row: Any) -> NodeEntry:
    return NodeEntry(
        step=row.step,
        attempt=row.attempt,
        seq=row.seq,
        release=row.release,
        failed=row.failed,
        results=None if row.results is None else tuple(dict(r) for r in row.results),
    )


def _to_row(cluster_id: str, name: str, entry: NodeEntry) -> dict[str, Any]:
    return {
        "cluster_id": cluster_id,
        "name": name,
        "step": entry.step,
        "attempt": entry.attempt,
        "seq": entry.seq,
        "release": entry.release,
        "failed": entry.failed,
        "results": None if entry.results is None else [dict(r) for r in entry.results],
    }


def fetch(session: orm.Session, cluster_id: str) -> dict[str, NodeEntry]:
    """Every work entry of ``cluster_id``, by node name (one SELECT, no ORM rows)."""
    rows = session.execute(sa.select(_T).where(_T.c.cluster_id == cluster_id))
    return {row.name: _from_row(row) for row in rows}


def store(
    session: orm.Session, cluster_id: str, before: Mapping[str, NodeEntry], after: Mapping[str, NodeEntry]
) -> int:
    """Write the difference between ``before`` (what ``fetch`` returned) and ``after`` (what the step left):
    one bulk DELETE, INSERT and UPDATE at most. Returns the number of rows written."""
    gone = [n for n in before if n not in after]
    new = [_to_row(cluster_id, n, e) for n, e in after.items() if n not in before]
    moved = [_to_row(cluster_id, n, e) for n, e in after.items() if n in before and before[n] != e]
    for i in range(0, len(gone), _CHUNK):
        session.execute(sa.delete(_T).where(_T.c.cluster_id == cluster_id, _T.c.name.in_(gone[i : i + _CHUNK])))
    if new:
        session.execute(sa.insert(_T), new)
    if moved:
        for row in moved:
            row["k_cluster"], row["k_name"] = row.pop("cluster_id"), row.pop("name")
        update = (
            sa.update(_T)
            .where(_T.c.cluster_id == sa.bindparam("k_cluster"), _T.c.name == sa.bindparam("k_name"))
            .values({c: sa.bindparam(c) for c in ("step", "attempt", "seq", "release", "failed", "results")})
        )
        session.connection().execute(update, moved)
    return len(gone) + len(new) + len(moved)
