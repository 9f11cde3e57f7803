"""The database side of ``velyrix.fleet.transitions``: node rows move through ``transition()`` and every
move is recorded in ``node_transitions`` in the same transaction (the caller commits)."""

from __future__ import annotations

import datetime as dt
from typing import Any

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


def move(session: orm.Session, node: models.Node, to_state: str, *, actor: str, reason: str) -> None:
    """``transition()`` a node row to ``to_state`` unless it is already there (idempotent on resume)."""
    current = node.fleet_stage if transitions.field_of(to_state) == "fleet_stage" else node.provisioning_state
    if current == to_state:
        return
    transitions.transition(node, to_state, actor=actor, reason=reason, store=DbTransitionStore(session))
