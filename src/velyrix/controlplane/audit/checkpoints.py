"""Signed checkpoints of the audit log: ``{kind, tree_size, root_hash, timestamp}`` signed with Ed25519 by
the control plane's audit key (``reconcile.signing``, key name ``audit-log``), in the same document shape
as acceptance reports, so ``signing.verify`` checks both.

A checkpoint is published on demand (``publish``, ``POST /v1/audit-log/checkpoints``) and by a thread
of the API process every ``VELYRIX_AUDIT_CHECKPOINT_INTERVAL_S`` seconds (default 60) when the log grew.

Every ``velyrix server`` replica (and worker) on one PostgreSQL runs that thread, so publishing is one at a
time: ``publish`` reads the log and its latest checkpoint under the claim ``LOCK`` (``reconcile.locks.hold``:
a transaction-scoped advisory lock on PostgreSQL, a process-wide lock on SQLite), held until the caller's
transaction ends, so a second publisher waits for the first one's commit and then answers its checkpoint, as
when the log has not grown. The database keeps one checkpoint per tree size besides forced ones (``sole``: a
unique index, migration 0032), so a publisher that skipped the claim is refused rather than heard twice
(tests/controlplane/test_audit_checkpoint_replicas.py).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors, settings
from velyrix.controlplane.audit import log
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import evidence as ev
from velyrix.controlplane.reconcile import locks, signing

KIND = "velyrix.audit.checkpoint/v1"
KEY_NAME = "audit-log"
DEFAULT_INTERVAL_S = 60.0
LOCK = "audit/checkpoint"
"""The claim a publisher holds from reading the log to its commit (``reconcile.locks.hold``)."""

_log = logging.getLogger(__name__)


def public_key() -> str:
    """The audit key's public half (raw Ed25519, base64): what a client pins."""
    return signing.public_key_b64(KEY_NAME)


def latest(session: orm.Session) -> ev.AuditCheckpoint | None:
    """The checkpoint of the largest tree (the newest of those)."""
    cp = ev.AuditCheckpoint
    stmt = sa.select(cp).order_by(cp.tree_size.desc(), cp.at.desc(), cp.id.desc()).limit(1)
    return session.execute(stmt).scalar_one_or_none()


def publish(session: orm.Session, *, force: bool = False) -> ev.AuditCheckpoint:
    """Sign the log's current size and root and store the checkpoint (the caller commits; ``LOCK`` is held
    until then). The latest checkpoint is returned when the log has not grown since (also when another
    publisher signed this size meanwhile); ``force`` signs the same size again with a fresh timestamp (e.g.
    after the audit key changed), stored beside the first one of that size, not as its ``sole`` one."""
    locks.hold(session, LOCK)
    size = log.tree_size(session)
    last = latest(session)
    if last is not None and last.tree_size == size and not force:
        return last
    if last is not None and last.tree_size > size:
        raise errors.VelyrixError(
            f"the audit log has {size} leaves but checkpoint {last.id} signed {last.tree_size}: it was truncated",
            hint="run: velyrix audit verify",
        )
    now = models.utcnow()
    body = {"kind": KIND, "tree_size": size, "root_hash": log.root(session, size).hex(), "timestamp": log.iso(now)}
    again = last is not None and last.tree_size == size
    row = ev.AuditCheckpoint(
        tree_size=size,
        root_hash=body["root_hash"],
        at=now,
        document=signing.sign(body, KEY_NAME),
        sole=None if again else True,
    )
    session.add(row)
    return row


def interval_s() -> float:
    """Seconds between automatic checkpoints (``VELYRIX_AUDIT_CHECKPOINT_INTERVAL_S``; 0 turns them off)."""
    raw = settings.load().signing.audit_checkpoint_interval or str(DEFAULT_INTERVAL_S)
    try:
        value = float(raw)
    except ValueError:
        raise errors.InvalidInputError(
            f"VELYRIX_AUDIT_CHECKPOINT_INTERVAL_S={raw!r} is not a number of seconds", hint="e.g. 60"
        ) from None
    return max(value, 0.0)


class Publisher:
    """A daemon thread that publishes a checkpoint every ``interval_s`` seconds when the log grew."""

    def __init__(self, sessionmaker: orm.sessionmaker[orm.Session], interval: float) -> None:
        self.sessionmaker = sessionmaker
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> dict[str, Any] | None:
        """Publish once if the log grew; returns the checkpoint's document (None when unchanged)."""
        with self.sessionmaker() as session:
            row = publish(session)
            if row not in session.new:  # unchanged, or another replica published this size first
                return None
            session.commit()
            return row.document

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.tick()
            except Exception:  # a failed round is retried at the next interval; the failure is logged
                _log.exception("could not publish an audit checkpoint")

    def start(self) -> None:
        if self.interval > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="velyrix-audit-checkpoints", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
