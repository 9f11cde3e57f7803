"""The audit log as a Merkle tree in the database: every audit event becomes leaf ``idx`` at commit.

Layout (tables in ``db.models.evidence``): ``audit_log_head`` holds the tree size; ``audit_leaves`` one
row per event: its leaf hash (``SHA-256(0x00 || canonical event)``) and, packed in ``parents``, the inner
nodes that this leaf completes (``holder``), so an append is one row. A session commit that carries new
audit events bumps the head (its row lock orders concurrent writers) and writes the leaves, in the
transaction of the events. Proofs read O(log n) stored nodes in one query (``merkle.pieces``).

The canonical event is JSON with sorted keys and no spaces of ``FIELDS`` plus ``index``; ``at`` is UTC
with microseconds (``2026-12-01T10:40:00.000000Z``). Anyone holding the event and its index can
recompute its leaf hash (``velyrix.controlplane.audit.verify``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.audit import merkle
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import evidence as ev

FIELDS = (
    "id",
    "at",
    "actor",
    "key_id",
    "tenant_id",
    "action",
    "target",
    "request_id",
    "source_address",
    "outcome",
    "status_code",
    "error_code",
    "detail",
)
_PENDING = "velyrix_audit_pending"


def iso(at: dt.datetime | str) -> str:
    """``at`` (aware, naive UTC, or SQLite's stored text) as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    if isinstance(at, str):
        at = dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
    if at.tzinfo is None:
        at = at.replace(tzinfo=dt.UTC)
    return at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_dict(row: dict[str, Any] | models.AuditEvent) -> dict[str, Any]:
    """The fields of an audit event (ORM object or a raw row mapping) in their canonical JSON values."""
    out: dict[str, Any] = {name: (row[name] if isinstance(row, dict) else getattr(row, name)) for name in FIELDS}
    out["at"] = iso(out["at"])
    if isinstance(out["detail"], str):  # a raw SQLite row: JSON text
        out["detail"] = json.loads(out["detail"])
    return out


def canonical(event: dict[str, Any], index: int) -> bytes:
    """The leaf data of ``event`` (as ``event_dict`` returns it) at leaf ``index``."""
    body = {**event, "index": index}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def canonical_row(row: dict[str, Any] | models.AuditEvent, index: int) -> bytes:
    return canonical(event_dict(row), index)


def tree_rows(leaf_data: Sequence[bytes], event_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Rows of ``audit_leaves`` for a log of ``leaf_data`` from leaf 0 (a backfill, a benchmark)."""
    nodes: dict[merkle.NodeKey, bytes] = {}
    leaves = []
    for i, (data, event_id) in enumerate(zip(leaf_data, event_ids, strict=True)):
        h = nodes[(0, i)] = merkle.leaf_hash(data)
        made = merkle.new_nodes(i, h, [nodes[k] for k in merkle.left_siblings(i)])
        nodes.update(made)
        leaves.append({"idx": i, "event_id": event_id, "leaf_hash": h, "parents": b"".join(n for _, n in made)})
    return leaves


def holder(key: merkle.NodeKey) -> tuple[int, int]:
    """(leaf row, byte offset) that stores node ``key``: the leaf completing a node keeps it in ``parents``
    (level ``k`` at offset ``32 * (k - 1)``); level 0 is the row's own ``leaf_hash`` (offset -1)."""
    level, idx = key
    return ((idx + 1) << level) - 1, 32 * (level - 1)


_SELECT = "SELECT idx, leaf_hash, parents FROM audit_leaves WHERE idx IN ({marks})"
_BUMP = "UPDATE audit_log_head SET tree_size = tree_size + {n} WHERE id = 1 RETURNING tree_size"
_INSERT = {
    "sqlite": "INSERT INTO audit_leaves (idx, event_id, leaf_hash, parents) VALUES (?, ?, ?, ?)",
    "postgresql": "INSERT INTO audit_leaves (idx, event_id, leaf_hash, parents) VALUES (%s, %s, %s, %s)",
}


def _conn(session: orm.Session | sa.Connection) -> sa.Connection:
    return session.connection() if isinstance(session, orm.Session) else session


def fetch_nodes(session: orm.Session | sa.Connection, keys: Iterable[merkle.NodeKey]) -> dict[merkle.NodeKey, bytes]:
    """The stored hashes of ``keys``, in one query; absent ones are left out."""
    wanted = {key: holder(key) for key in keys}
    rows = sorted({row for row, _ in wanted.values()})
    if not rows:
        return {}
    conn = _conn(session)
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    got = {
        int(idx): (bytes(h), bytes(p or b""))
        for idx, h, p in conn.exec_driver_sql(_SELECT.format(marks=", ".join([mark] * len(rows))), tuple(rows))
    }
    return _pick(wanted, got)


def _pick(
    wanted: dict[merkle.NodeKey, tuple[int, int]], got: dict[int, tuple[bytes, bytes]]
) -> dict[merkle.NodeKey, bytes]:
    found: dict[merkle.NodeKey, bytes] = {}
    for key, (row, offset) in wanted.items():
        if row in got:
            leaf, parents = got[row]
            value = leaf if key[0] == 0 else parents[offset : offset + 32]
            if len(value) == 32:
                found[key] = value
    return found


# PostgreSQL, one event: bump the head and read the stored left siblings in one round trip. The sibling
# at level k of leaf i (k below the trailing one bits of i: 2**(k+1) divides i + 1) is held by row i - 2**k.
_PG_BUMP_AND_SIBLINGS = """
WITH h AS (UPDATE audit_log_head SET tree_size = tree_size + 1 WHERE id = 1 RETURNING tree_size - 1 AS i)
SELECT h.i, l.idx, l.leaf_hash, l.parents FROM h
LEFT JOIN generate_series(0, 62) AS k ON mod(h.i + 1, 1::bigint << (k + 1)) = 0
LEFT JOIN audit_leaves l ON l.idx = h.i - (1::bigint << k)
"""


def _bump(conn: sa.Connection, count: int) -> tuple[int, dict[merkle.NodeKey, bytes]]:
    """(first new index, stored nodes already read) after growing the head by ``count``."""
    if conn.dialect.name == "postgresql" and count == 1:
        rows = conn.exec_driver_sql(_PG_BUMP_AND_SIBLINGS).all()
        if not rows:
            raise errors.VelyrixError("the audit log has no head row", hint="run: velyrix db upgrade")
        index = int(rows[0][0])
        got = {int(r[1]): (bytes(r[2]), bytes(r[3] or b"")) for r in rows if r[1] is not None}
        return index, _pick({k: holder(k) for k in merkle.left_siblings(index)}, got)
    end = conn.exec_driver_sql(_BUMP.format(n=count)).scalar_one_or_none()
    if end is None:
        raise errors.VelyrixError("the audit log has no head row", hint="run: velyrix db upgrade")
    return int(end) - count, {}


def append(session: orm.Session, events: Sequence[models.AuditEvent]) -> int:
    """Make ``events`` the next leaves of the log, in the session's transaction; returns the first index.

    Driver-level statements (no ORM): one UPDATE of the head, one SELECT of the left siblings when the
    leaf completes inner nodes (on PostgreSQL one statement for both), one INSERT for the leaves
    (bench/bench_audit.py measures the cost)."""
    conn = _conn(session)
    start, made = _bump(conn, len(events))
    rows = []
    for i, event in enumerate(events, start):
        h = made[(0, i)] = merkle.leaf_hash(canonical_row(event, i))
        want = merkle.left_siblings(i)
        missing = [k for k in want if k not in made]
        made.update(fetch_nodes(conn, missing) if missing else {})
        completed = merkle.new_nodes(i, h, [made[k] for k in want])
        made.update(completed)
        rows.append((i, event.id, h, b"".join(n for _, n in completed)))
    conn.exec_driver_sql(_INSERT[conn.dialect.name], rows if len(rows) > 1 else rows[0])
    return start


def enqueue(session: orm.Session, event: models.AuditEvent) -> None:
    """Make ``event`` the next leaf when ``session`` commits (in the order of the calls)."""
    pending = session.info.setdefault(_PENDING, [])
    if not any(e is event for e in pending):
        pending.append(event)


def _collect(session: orm.Session, _ctx: Any, _instances: Any) -> None:
    """Audit events added without ``enqueue`` join the queue too (in id order)."""
    new = sorted((o for o in session.new if isinstance(o, models.AuditEvent)), key=lambda e: e.id)
    for event in new:
        enqueue(session, event)


def _sequence(session: orm.Session) -> None:
    session.flush()
    pending = session.info.pop(_PENDING, None)
    if pending:
        append(session, pending)


def _forget(session: orm.Session) -> None:
    session.info.pop(_PENDING, None)


def install() -> None:
    """Sequence audit events into the log on every ORM session's commit (idempotent)."""
    for name, fn in (("before_flush", _collect), ("before_commit", _sequence), ("after_rollback", _forget)):
        if not sa.event.contains(orm.Session, name, fn):
            sa.event.listen(orm.Session, name, fn)


def tree_size(session: orm.Session | sa.Connection) -> int:
    """The number of leaves in the log."""
    return int(session.execute(sa.select(ev.AuditLogHead.tree_size).where(ev.AuditLogHead.id == 1)).scalar_one())


def hashes(session: orm.Session | sa.Connection, ranges: Sequence[merkle.Range]) -> list[bytes]:
    """The subtree hash of each leaf range, from the stored nodes; a missing node is a damaged log."""
    keys = merkle.nodes_for(ranges)
    nodes = fetch_nodes(session, keys)
    lost = sorted(keys - nodes.keys())
    if lost:
        level, idx = lost[0]
        raise errors.VelyrixError(
            f"the audit log's tree lacks node level {level} index {idx}: it was altered",
            hint="run: velyrix audit verify (names the first missing or altered event)",
        )
    return [merkle.subtree_hash(s, e, nodes.__getitem__) for s, e in ranges]


def root(session: orm.Session | sa.Connection, size: int) -> bytes:
    """The root hash of the log's first ``size`` leaves."""
    return hashes(session, [(0, size)])[0] if size else merkle.EMPTY_ROOT


def leaf_of(session: orm.Session | sa.Connection, event_id: str) -> ev.AuditLeaf | None:
    return session.execute(sa.select(ev.AuditLeaf).where(ev.AuditLeaf.event_id == event_id)).scalar_one_or_none()


def entries(session: orm.Session, start: int, limit: int) -> list[dict[str, Any]]:
    """Leaves ``[start, start + limit)`` with their events (``event`` None when its row is gone)."""
    leaf, event = ev.AuditLeaf, models.AuditEvent
    stmt = (
        sa.select(leaf.idx, leaf.event_id, leaf.leaf_hash, event)
        .outerjoin(event, event.id == leaf.event_id)
        .where(leaf.idx >= start, leaf.idx < start + limit)
        .order_by(leaf.idx)
    )
    return [
        {
            "index": idx,
            "event_id": event_id,
            "leaf_hash": bytes(h).hex(),
            "event": event_dict(row) if row is not None else None,
        }
        for idx, event_id, h, row in session.execute(stmt)
    ]
