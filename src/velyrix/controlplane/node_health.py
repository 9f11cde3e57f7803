"""Node agents on the control plane: their credentials and their reports.

- ``issue_token``: a node's agent authenticates with its own bearer token (``vlxn_``, see ``auth.keys``),
  issued when the node is registered (``POST /v1/nodes``) or rotated by an operator
  (``POST /v1/nodes/{id}/credentials``); shown once, only its SHA-256 stored, older ones revoked.
- ``record_report``: ``POST /v1/nodes/{hostname}/reports`` (wire contract in docs/telemetry.md) keeps the
  node's last report and the verdict it carries (``node_reports``, one row per node) and, when the verdict
  says DRAIN_NOW or worse, hands it to the report handler the service was composed with
  (``app.state.report_handler``: ``velyrix.ops.remediation.node_reports.handle`` quarantines, replaces, opens
  incidents and RMA records). The control plane itself never imports ``ops`` (layers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.auth import keys
from velyrix.controlplane.db import health_tables, models
from velyrix.health.engine import Reason, Verdict
from velyrix.health.ladder import Action, Level

ReportHandler = Callable[[orm.Session, models.Node, Verdict, "str | None"], list[str]]
"""Acts on a verdict in the request's transaction, given the action of the node's previous report (None:
none); returns what it did (``quarantine <node>``, ``replace <node> with <spare> in <cluster>`` ...)."""

ACT_FROM = Action.DRAIN_NOW
"""Verdicts from this rung up are acted on by the control plane (lower ones stay with the node's agent and
its scheduler seam)."""


def issue_token(
    session: orm.Session, node: models.Node, *, created_by: str
) -> tuple[health_tables.NodeCredential, str]:
    """A new token for ``node``'s agent: ``(row, token)``; every earlier token of the node is revoked."""
    now = models.utcnow()
    for old in session.scalars(
        sa.select(health_tables.NodeCredential).where(
            health_tables.NodeCredential.node_id == node.id, health_tables.NodeCredential.revoked_at.is_(None)
        )
    ):
        old.revoked_at = now
    token = keys.generate(keys.NODE_PREFIX)
    row = health_tables.NodeCredential(
        node_id=node.id,
        prefix=keys.display_prefix(token),
        secret_sha256=keys.digest(token),
        created_by=created_by[:200],
    )
    session.add(row)
    session.flush()
    return row, token


def verdict_of(node: str, sample: Mapping[str, Any]) -> Verdict | None:
    """The verdict an agent stamped on ``sample`` (``health_level`` 0-3, ``health_action`` 0-7,
    ``health_summary`` ``"<key>: <message>"``), or None when it carries none. Bad values: 422."""
    level, action = sample.get("health_level"), sample.get("health_action")
    if level is None or action is None:
        return None
    valid_levels, valid_actions = [int(v) for v in Level], [int(a) for a in Action]
    if not isinstance(level, int) or isinstance(level, bool) or level not in valid_levels:
        raise errors.InvalidInputError(
            f"sample.health_level {level!r} is not a verdict level",
            hint=f"expected one of {valid_levels} (0 ok .. 3 fatal)",
        )
    if not isinstance(action, int) or isinstance(action, bool) or action not in valid_actions:
        raise errors.InvalidInputError(
            f"sample.health_action {action!r} is not a ladder rung",
            hint=f"expected one of {valid_actions} (0 IGNORE .. 7 RMA)",
        )
    summary = str(sample.get("health_summary") or "")
    reasons: tuple[Reason, ...] = ()
    if action > Action.IGNORE or level > 0:
        key, _, message = summary.partition(": ")
        reasons = (
            Reason(
                key=key or f"agent:{Action(action).name}",
                source="agent",
                message=message or summary,
                level=Level(level),
                action=Action(action),
                hardware=action >= Action.QUARANTINE,
            ),
        )
    return Verdict(node=node, level=Level(level), action=Action(action), reasons=reasons)


def record_report(
    session: orm.Session, node: models.Node, report: Mapping[str, Any], handler: ReportHandler | None = None
) -> tuple[health_tables.NodeReport, list[str]]:
    """Keep ``report`` as ``node``'s last one and act on its verdict (see the module docstring).
    Returns the stored row (its ``actions``: what the last report that changed anything did) and what this
    report did."""
    name = node.name
    sample = dict(report.get("sample") or {})
    verdict = verdict_of(name, sample)
    row = session.scalar(sa.select(health_tables.NodeReport).where(health_tables.NodeReport.node_id == node.id))
    previous = row.health_action if row is not None else None
    if row is None:
        row = health_tables.NodeReport(node_id=node.id, reports=0, actions=[])
        session.add(row)
    row.tenant_id = node.tenant_id
    row.received_at = models.utcnow()
    row.collected_at_s = float(report.get("collected_at_s") or 0.0)
    row.up = bool(report.get("up", True))
    row.problems = list(report.get("problems") or [])
    row.sample = sample
    row.health_level = int(verdict.level) if verdict else None
    row.health_action = verdict.action.name if verdict else None
    row.health_summary = verdict.summary() if verdict else ""
    row.reports = (row.reports or 0) + 1
    done: list[str] = []
    try:
        if verdict is not None and verdict.action >= ACT_FROM and handler is not None:
            # the same verdict reported again is acted on again only where something is left to do: the
            # handler's steps are idempotent (a quarantined node is not quarantined twice)
            done = handler(session, node, verdict, previous)
        if done or previous != row.health_action:
            row.actions = done
        session.flush()
    except (orm.exc.StaleDataError, sa.exc.OperationalError) as exc:
        # the reconciler (or another replica) changed the node or its cluster meanwhile: nothing of this
        # report is kept, and the agent sends it again (503 is retried)
        session.rollback()
        raise errors.BusyError(what=f"node '{name}' or its cluster", hint="the node agent retries by itself") from exc
    return row, done


def report_out(row: Any, node_name: str) -> dict[str, Any]:
    """The API view of a stored report."""
    return {
        "node_id": row.node_id,
        "hostname": node_name,
        "received_at": row.received_at,
        "collected_at_s": row.collected_at_s,
        "up": row.up,
        "problems": row.problems,
        "health_level": row.health_level,
        "health_action": row.health_action,
        "health_summary": row.health_summary,
        "actions": row.actions,
        "reports": row.reports,
        "sample": row.sample,
    }
