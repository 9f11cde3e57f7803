"""Degraded capacity: the intervals in which a node delivered to a cluster (provisioning ``active``, stage
``production``) carried a health verdict of level ``degraded`` or worse (``health.ladder.Level``) whose
action kept it in service, e.g. a row remap pending on a GPU (``RESET_GPU``); a verdict that takes the node
out quarantines it, which ends its healthy time anyway. Recorded in ``node_degradations`` on the fleet's
clock at each verdict; the SLA reads them when a contract says degraded GPUs count as down
(``velyrix.ops.sla.history``; docs/sla.md, 'Degraded capacity')"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane.db import models
from velyrix.fleet import states
from velyrix.health.ladder import Level


def in_service(node: models.Node) -> bool:
    """Delivering capacity to a cluster: what a degraded verdict can make less than healthy."""
    return (
        node.cluster_id is not None
        and node.provisioning_state == states.ACTIVE
        and node.fleet_stage == states.PRODUCTION
    )


def track(session: orm.Session, node: models.Node, level: Level, reason: str, at: dt.datetime) -> str | None:
    """Open the node's degraded interval when ``level`` is ``DEGRADED`` or worse and the node is in
    service; close the open one when the level is lower or the node left service. Returns ``opened`` or
    ``closed`` when something changed (the caller commits)."""
    q = sa.select(models.NodeDegradation).where(
        models.NodeDegradation.node_id == node.id, models.NodeDegradation.ended_at.is_(None)
    )
    current = session.scalar(q)
    degraded = level >= Level.DEGRADED and in_service(node)
    if degraded and current is None:
        session.add(
            models.NodeDegradation(node_id=node.id, cluster_id=node.cluster_id, started_at=at, reason=reason[:2000])
        )
        return "opened"
    if current is not None and (not degraded or current.cluster_id != node.cluster_id):
        current.ended_at = at
        return "closed"
    return None
