"""The rollout's step journal: every step is written (``started``) and committed before it is acted on,
then marked ``done`` with what it found. A step's driver request id is ``ROLLOUT_ID/KEY``, so a step retried
after a crash is deduplicated by the driver; ``act`` first looks at the world (an install whose version is
already on the node is not installed again), so a driver that forgot the request is safe too.

``crash_hook``: tests set it to raise at a chosen point (``recorded`` or ``acted`` of a key) to kill the
controller there; it is None in service.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import rollouts as models_rollouts
from velyrix.fleet import clock

STARTED = "started"
DONE = "done"

crash_hook: Callable[[str, str], None] | None = None
"""Called with (point, key) after each commit of the journal; tests raise from it to simulate a kill."""

WAIT = None
"""What ``act`` returns while its driver request is still running."""


def _point(point: str, key: str) -> None:
    if crash_hook is not None:
        crash_hook(point, key)


class Journal:
    """The steps of one rollout, cached per controller pass (rows are the source of truth)."""

    def __init__(
        self, session: orm.Session, rollout: models_rollouts.Rollout, before_commit: Callable[[], None] | None = None
    ) -> None:
        self.session = session
        self.rollout = rollout
        self.before_commit = before_commit
        """Called before each commit (a twin saves its nodes' state: never behind the journal)."""
        q = sa.select(models_rollouts.RolloutStep).where(models_rollouts.RolloutStep.rollout_id == rollout.id)
        self.rows = {r.key: r for r in session.scalars(q)}

    def get(self, key: str) -> models_rollouts.RolloutStep | None:
        return self.rows.get(key)

    def done(self, key: str) -> dict[str, Any] | None:
        """The detail of step ``key`` when it is done, else None."""
        row = self.rows.get(key)
        return dict(row.detail) if row is not None and row.status == DONE else None

    def request_id(self, key: str) -> str:
        return f"{self.rollout.id}/{key}"

    def step(
        self,
        key: str,
        action: str,
        node: str | None,
        act: Callable[[dict[str, Any]], dict[str, Any] | None],
        intent: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Run step ``key`` once: record it (with ``intent``, e.g. the version a node ran before), commit,
        then ``act(intent)``; when ``act`` returns a result (not ``WAIT``), mark it done and commit.
        Returns the result, or None while waiting. A step already done returns its stored result."""
        row = self.rows.get(key)
        if row is not None and row.status == DONE:
            return dict(row.detail)
        if row is None:
            row = models_rollouts.RolloutStep(
                id=models.new_id("rst"),
                rollout_id=self.rollout.id,
                key=key,
                node=node,
                action=action,
                status=STARTED,
                detail=dict(intent or {}),
                started_at=clock.now(),
            )
            self.session.add(row)
            self._commit()
            self.rows[key] = row
            _point("recorded", key)
        result = act(dict(row.detail))
        if result is WAIT:
            return None
        _point("acted", key)
        row.status = DONE
        row.detail = {**row.detail, **result}
        row.finished_at = clock.now()
        self._commit()
        return dict(row.detail)

    def _commit(self) -> None:
        if self.before_commit is not None:
            self.before_commit()
        self.session.commit()

    def by_action(self, action: str) -> list[models_rollouts.RolloutStep]:
        """Steps of ``action``, in the order they were recorded."""
        return sorted((r for r in self.rows.values() if r.action == action), key=lambda r: (r.started_at, r.key))


def utc(t: dt.datetime) -> dt.datetime:
    """``t`` as an aware UTC datetime (SQLite hands back naive ones)."""
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)
