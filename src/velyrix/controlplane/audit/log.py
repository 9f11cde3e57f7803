"""The audit log as a Merkle tree in the database: every audit event becomes leaf ``idx`` at commit.

Layout (tables in ``db.models_evidence``): ``audit_log_head`` holds the tree size; ``audit_leaves`` the
leaf hash of each event (``SHA-256(0x00 || canonical event)``); ``audit_nodes`` every complete inner
node. A session commit that carries new audit events bumps the head (its row lock orders concurrent
writers), writes the leaves and the inner nodes they complete (on average one per leaf), all in the
transaction of the events. Proofs read O(log n) stored nodes (``merkle.pieces``).

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
from velyrix.controlplane.db import models_evidence as ev

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


def tree_rows(
    leaf_data: Sequence[bytes], event_ids: Sequence[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows of ``audit_leaves`` and ``audit_nodes`` for a log of ``leaf_data`` from leaf 0 (a backfill)."""
    nodes: dict[merkle.NodeKey, bytes] = {}
    leaves = []
    for i, (data, event_id) in enumerate(zip(leaf_data, event_ids, strict=True)):
        h = nodes[(0, i)] = merkle.leaf_hash(data)
        leaves.append({"idx": i, "event_id": event_id, "leaf_hash": h})
        nodes.update(merkle.new_nodes(i, h, [nodes[k] for k in merkle.left_siblings(i)]))
    inner = [{"level": lv, "idx": i, "hash": h} for (lv, i), h in nodes.items() if lv > 0]
    return leaves, inner


def fetch_nodes(session: orm.Session | sa.Connection, keys: Iterable[merkle.NodeKey]) -> dict[merkle.NodeKey, bytes]:
    """The stored hashes of ``keys`` (level 0 from ``audit_leaves``); absent ones are left out."""
    by_level: dict[int, list[int]] = {}
    for level, idx in keys:
        by_level.setdefault(level, []).append(idx)
    found: dict[merkle.NodeKey, bytes] = {}
    for level, idxs in by_level.items():
        if level == 0:
            stmt = sa.select(ev.AuditLeaf.idx, ev.AuditLeaf.leaf_hash).where(ev.AuditLeaf.idx.in_(idxs))
        else:
            stmt = sa.select(ev.AuditNode.idx, ev.AuditNode.hash).where(
                ev.AuditNode.level == level, ev.AuditNode.idx.in_(idxs)
            )
        found.update({(level, i): bytes(h) for i, h in session.execute(stmt)})
    return found


def append(session: orm.Session, events: Sequence[models.AuditEvent]) -> int:
    """Make ``events`` the next leaves of the log, in the session's transaction; returns the first index."""
    head = ev.AuditLogHead
    end = session.execute(
        sa.update(head)
        .where(head.id == 1)
        .values(tree_size=head.tree_size + len(events))
        .returning(head.tree_size)
        .execution_options(synchronize_session=False)
    ).scalar_one_or_none()
    if end is None:
        raise errors.VelyrixError("the audit log has no head row", hint="run: velyrix db upgrade")
    start = end - len(events)
    made: dict[merkle.NodeKey, bytes] = {}
    leaves, inner = [], []
    for i, event in enumerate(events, start):
        h = made[(0, i)] = merkle.leaf_hash(canonical_row(event, i))
        leaves.append({"idx": i, "event_id": event.id, "leaf_hash": h})
        want = merkle.left_siblings(i)
        missing = [k for k in want if k not in made]
        made.update(fetch_nodes(session, missing) if missing else {})
        for key, node in merkle.new_nodes(i, h, [made[k] for k in want]):
            made[key] = node
            inner.append({"level": key[0], "idx": key[1], "hash": node})
    session.execute(sa.insert(ev.AuditLeaf), leaves)
    if inner:
        session.execute(sa.insert(ev.AuditNode), inner)
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
