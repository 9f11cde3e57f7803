"""Node agents on the control plane: their credentials and their reports.

- ``issue_token``: a node's agent authenticates with its own bearer token (``vlxn_``, see ``auth.keys``),
  issued when the node is registered (``POST /v1/nodes``) or rotated by an operator
  (``POST /v1/nodes/{id}/credentials``); shown once, only its SHA-256 stored, older ones revoked.
- ``record_report``: ``POST /v1/nodes/{hostname}/reports`` (wire contract in docs/telemetry.md) keeps the
  node's last report (``node_reports``, one row per node), judges its evidence on the server
  (``node_evidence``: catalog thresholds, the server's history of the node, its peers; the agent's verdict
  is a claim, recorded and flagged when it differs) and hands the server's verdict to the report handler
  the service was composed with (``app.state.report_handler``: ``velyrix.ops.remediation.node_reports`` drains,
  resets, reboots, quarantines, replaces, opens incidents and RMA records). The control plane itself never
  imports ``ops`` (layers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane import job_usage, node_evidence
from velyrix.controlplane.auth import keys
from velyrix.controlplane.db import health_tables, models

ReportHandler = Callable[[orm.Session, models.Node, node_evidence.Judgement], list[str]]
"""Acts on the server's verdict of a report in the request's transaction (``velyrix.ops.remediation.node_reports``:
drains, driver fixes, quarantine, replacement, incident, RMA); returns what it did."""


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


def issue_tokens(session: orm.Session, nodes: list[models.Node], *, created_by: str) -> dict[str, str]:
    """``issue_token`` for many nodes at once (``velyrix up``'s twin agents): every earlier token of these
    nodes revoked in one UPDATE, the new credentials written in one bulk INSERT. Returns hostname -> token."""
    if not nodes:
        return {}
    now = models.utcnow()
    table = cast(sa.Table, health_tables.NodeCredential.__table__)
    ids = [n.id for n in nodes]
    for start in range(0, len(ids), 500):  # bound the IN list (SQLite's variable limit)
        session.execute(
            sa.update(table)
            .where(table.c.node_id.in_(ids[start : start + 500]), table.c.revoked_at.is_(None))
            .values(revoked_at=now)
        )
    tokens = {n.name: keys.generate(keys.NODE_PREFIX) for n in nodes}
    rows = [
        {
            "id": models.new_id(health_tables.NodeCredential.id_prefix),
            "node_id": n.id,
            "prefix": keys.display_prefix(tokens[n.name]),
            "secret_sha256": keys.digest(tokens[n.name]),
            "created_by": created_by[:200],
            "created_at": now,
        }
        for n in nodes
    ]
    session.execute(sa.insert(table), rows)
    return tokens


def record_report(
    session: orm.Session, node: models.Node, report: Mapping[str, Any], handler: ReportHandler | None = None
) -> tuple[health_tables.NodeReport, list[str]]:
    """Keep ``report`` as ``node``'s last one, judge it on the server (``node_evidence.judge``: the agent's
    verdict is a claim, recorded and compared) and hand the server's verdict to ``handler``. Returns the
    stored row (its ``actions``: what the last report that changed anything did) and what this report did."""
    name = node.name
    judgement = node_evidence.judge(session, node, report)
    verdict = judgement.verdict
    row = session.scalar(sa.select(health_tables.NodeReport).where(health_tables.NodeReport.node_id == node.id))
    previous = row.health_action if row is not None else None
    job_usage.meter(session, node, row, report)  # the interval since the last report, to the jobs it named
    if row is None:
        row = health_tables.NodeReport(node_id=node.id, reports=0, actions=[])
        session.add(row)
    row.tenant_id = node.tenant_id
    row.received_at = models.utcnow()
    row.collected_at_s = float(report.get("collected_at_s") or 0.0)
    row.up = bool(report.get("up", True))
    row.problems = list(report.get("problems") or [])
    row.sample = dict(report.get("sample") or {})
    row.health_level = int(verdict.level)
    row.health_action = verdict.action.name
    row.health_summary = verdict.summary()
    row.reports = (row.reports or 0) + 1
    done: list[str] = []
    try:
        if handler is not None:
            # the same verdict reported again is acted on again only where something is left to do: the
            # handler's steps are idempotent (a quarantined node is not quarantined twice)
            done = handler(session, node, judgement)
        if done or previous != row.health_action:
            row.actions = done
        session.flush()
    except (orm.exc.StaleDataError, sa.exc.OperationalError) as exc:
        # the reconciler (or another replica) changed the node or its cluster meanwhile: nothing of this
        # report is kept, and the agent sends it again (503 is retried)
        session.rollback()
        raise errors.BusyError(what=f"node '{name}' or its cluster", hint="the node agent retries by itself") from exc
    return row, done


def report_out(row: Any, node_name: str, evidence: Any = None) -> dict[str, Any]:
    """The API view of a stored report; ``evidence`` (the node's ``NodeEvidence``) adds the server's whole
    verdict, the agent's claimed one and how often they disagreed."""
    return {
        "verdict": getattr(evidence, "verdict", None) or None,
        "agent_verdict": getattr(evidence, "agent_verdict", None),
        "disagreements": int(getattr(evidence, "disagreements", 0) or 0),
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
