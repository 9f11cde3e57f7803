"""The database side of ``velyrix.fleet.transitions``: node rows move through ``transition()`` and every
move is recorded in ``node_transitions`` in the same transaction (the caller commits)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import orm

from velyrix.controlplane.db import models
from velyrix.fleet import transitions


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


def move(session: orm.Session, node: models.Node, to_state: str, *, actor: str, reason: str) -> None:
    """``transition()`` a node row to ``to_state`` unless it is already there (idempotent on resume)."""
    current = node.fleet_stage if transitions.field_of(to_state) == "fleet_stage" else node.provisioning_state
    if current == to_state:
        return
    transitions.transition(node, to_state, actor=actor, reason=reason, store=DbTransitionStore(session))
