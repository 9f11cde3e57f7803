"""The database side of ``velyrix.fleet.transitions``: node rows move through ``transition()`` and every
move is recorded in ``node_transitions`` in the same transaction (the caller commits)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.fleet import states, transitions

_HELD = frozenset({states.ALLOCATED, states.PROVISIONING, states.ACTIVE})
"""Provisioning states in which a node is held for its tenant; leaving them (deprovisioning, failure,
release) ends the allocation that metering bills."""


class DbTransitionStore:
    """``TransitionStore`` on an SQLAlchemy session. The node's ``version`` column makes a concurrent
    change fail at flush (``StaleDataError``), so two replicas never both move a node."""

    def __init__(self, session: orm.Session) -> None:
        self.session = session

    def save_transition(self, node: Any, record: transitions.TransitionRecord) -> None:
        self.session.add(
            models.NodeTransition(
                node_id=node.id,
                field=record.field,
                from_state=record.from_state,
                to_state=record.to_state,
                actor=record.actor,
                reason=record.reason,
                at=dt.datetime.fromtimestamp(record.at_s, dt.UTC),
            )
        )
        self._allocation_history(node, record)

    def _allocation_history(self, node: Any, record: transitions.TransitionRecord) -> None:
        """Metering's state history (``models_noc.NodeAllocation``): opened when a node is allocated to a
        cluster, closed when it leaves ``_HELD`` (deprovisioned, released or failed)."""
        at = dt.datetime.fromtimestamp(record.at_s, dt.UTC)
        if record.field != "provisioning_state":
            return
        if record.to_state == states.ALLOCATED and node.cluster_id and node.tenant_id:
            self.session.add(
                models_noc.NodeAllocation(
                    node_id=node.id,
                    node_name=node.name,
                    node_type=node.node_type,
                    tenant_id=node.tenant_id,
                    cluster_id=node.cluster_id,
                    allocated_at=at,
                )
            )
        elif record.from_state in _HELD and record.to_state not in _HELD:
            self.session.flush()
            open_rows = self.session.query(models_noc.NodeAllocation).filter_by(node_id=node.id, released_at=None)
            for row in open_rows:
                row.released_at = at


class BulkTransitionStore(DbTransitionStore):
    """``DbTransitionStore`` that gathers the ``node_transitions`` rows of a pass and writes them with one
    bulk INSERT (``write``), instead of one ORM object (and one INSERT) per move: fleet intake moves every
    node of a new region three times. Moves that open or close an allocation take the ORM path at once."""

    def __init__(self, session: orm.Session) -> None:
        super().__init__(session)
        self.rows: list[dict[str, Any]] = []

    def save_transition(self, node: Any, record: transitions.TransitionRecord) -> None:
        metered = record.field == "provisioning_state" and (
            record.to_state == states.ALLOCATED or record.from_state in _HELD
        )
        if metered:
            super().save_transition(node, record)
            return
        self.rows.append(
            {
                "id": models.new_id(models.NodeTransition.id_prefix),
                "node_id": node.id,
                "field": record.field,
                "from_state": record.from_state,
                "to_state": record.to_state,
                "actor": record.actor,
                "reason": record.reason,
                "at": dt.datetime.fromtimestamp(record.at_s, dt.UTC),
            }
        )

    def write(self) -> int:
        """INSERT the gathered rows (in the session's transaction) and start over; returns rows written."""
        rows, self.rows = self.rows, []
        if rows:
            self.session.execute(sa.insert(_TRANSITIONS), rows)
        return len(rows)


def move(
    session: orm.Session,
    node: models.Node,
    to_state: str,
    *,
    actor: str,
    reason: str,
    store: DbTransitionStore | None = None,
) -> None:
    """``transition()`` a node row to ``to_state`` unless it is already there (idempotent on resume).
    ``store``: where the move is recorded (default: a ``DbTransitionStore`` on ``session``)."""
    current = node.fleet_stage if transitions.field_of(to_state) == "fleet_stage" else node.provisioning_state
    if current == to_state:
        return
    transitions.transition(node, to_state, actor=actor, reason=reason, store=store or DbTransitionStore(session))


_NODES = cast(sa.Table, models.Node.__table__)
_TRANSITIONS = cast(sa.Table, models.NodeTransition.__table__)
_BOOKKEEPING = frozenset({"id", "version", "updated_at"})


def flush_nodes(session: orm.Session, nodes: Iterable[models.Node]) -> int:
    """Write the changed node rows among ``nodes`` as bulk UPDATEs (one ``executemany`` per set of changed
    columns) instead of the ORM's one UPDATE per row, with the same optimistic lock: each row's WHERE names its
    ``version`` and a row changed by someone else fails with ``StaleDataError``, as the ORM's flush would.
    The ORM is then told the rows are clean (new ``version`` and ``updated_at``). Returns rows written."""
    groups: dict[tuple[str, ...], list[tuple[models.Node, dict[str, Any]]]] = defaultdict(list)
    for node in nodes:
        state = sa.inspect(node)
        if not state.persistent or not state.modified:
            continue
        attrs = state.attrs  # only attributes set since the load can have changed (``committed_state``)
        changes = {k: attrs[k].value for k in state.committed_state if attrs[k].history.has_changes()}
        if not changes or _BOOKKEEPING & changes.keys():
            continue  # nothing column-level, or bookkeeping set by hand: leave it to the ORM
        groups[tuple(sorted(changes))].append((node, changes))
    now = models.utcnow()
    conn = session.connection()
    written = 0
    for cols, rows in groups.items():
        stmt = (
            sa.update(_NODES)
            .where(
                _NODES.c.id == sa.bindparam("b_id", type_=_NODES.c.id.type),
                _NODES.c.version == sa.bindparam("b_version", type_=_NODES.c.version.type),
            )
            .values(
                {c: sa.bindparam(c, type_=_NODES.c[c].type) for c in cols}
                | {
                    "version": sa.bindparam("b_next", type_=_NODES.c.version.type),
                    "updated_at": sa.bindparam("b_now", type_=_NODES.c.updated_at.type),
                }
            )
        )
        params = [
            {**changes, "b_id": node.id, "b_version": node.version, "b_next": node.version + 1, "b_now": now}
            for node, changes in rows
        ]
        matched = conn.execute(stmt, params).rowcount
        if matched != len(params):
            raise orm.exc.StaleDataError(f"{len(params) - matched} of {len(params)} node rows changed concurrently")
        for node, changes in rows:
            for key, value in changes.items():
                orm.attributes.set_committed_value(node, key, value)
            orm.attributes.set_committed_value(node, "version", node.version + 1)
            orm.attributes.set_committed_value(node, "updated_at", now)
        written += len(params)
    return written
