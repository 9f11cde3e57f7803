"""What tenants are told about a rollout, through the NOC's channels: a cluster event (``velyrix status``,
the API), the maintenance window itself (``maintenance_windows``: what the SLA report excludes when it was
announced early enough, and what the status pages show), and pages to the rollout's ``notify`` targets
(``email:ADDRESS``, ``webhook:URL``, ``pagerduty:URL``; ``velyrix.ops.noc.paging.Pager``)."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane import status
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.controlplane.db.models import rollouts as models_rollouts
from velyrix.fleet import clock

log = logging.getLogger(__name__)

Sender = Callable[[str, dict[str, Any]], None]
"""Sends one notice to a target (a ``Pager``)."""


def label(rollout: models_rollouts.Rollout) -> str:
    """The label of the rollout's maintenance windows (how the engine finds the ones it announced)."""
    return f"rollout {rollout.name} ({rollout.id}): {rollout.component} {rollout.version}"


def windows(
    session: orm.Session, rollout: models_rollouts.Rollout, cluster_id: str
) -> list[models_noc.MaintenanceWindow]:
    """The windows this rollout announced for ``cluster_id``, earliest first."""
    q = sa.select(models_noc.MaintenanceWindow).where(
        models_noc.MaintenanceWindow.cluster_id == cluster_id, models_noc.MaintenanceWindow.label == label(rollout)
    )
    return sorted(session.scalars(q), key=lambda w: w.starts_at)


def send(targets: Sequence[str], content: dict[str, Any], sender: Sender | None) -> list[str]:
    """Send ``content`` to every target; returns the targets that failed (logged, never raised: a notice
    that cannot be delivered does not stop the rollout, and the journal records it)."""
    failed = []
    for target in targets:
        if sender is None:
            continue
        try:
            sender(target, content)
        except Exception as exc:  # a channel's error of any kind is reported, not fatal
            log.warning("rollout notice to %s failed: %s", target, exc)
            failed.append(target)
    return failed


def announce(
    session: orm.Session,
    rollout: models_rollouts.Rollout,
    cluster: models.Cluster,
    start: dt.datetime,
    end: dt.datetime,
    targets: Sequence[str],
    sender: Sender | None,
) -> dict[str, Any]:
    """Announce a maintenance window of ``cluster`` (now): the window row, a cluster event and the pages.
    The caller commits. Returns what was sent."""
    now = clock.now()
    session.add(
        models_noc.MaintenanceWindow(
            id=models.new_id("mw"),
            tenant_id=cluster.tenant_id,
            cluster_id=cluster.id,
            starts_at=start,
            ends_at=end,
            announced_at=now,
            label=label(rollout),
        )
    )
    what = f"{rollout.component} {rollout.version}"
    text = f"{what} will be installed on nodes of {cluster.name} between {start.isoformat()} and {end.isoformat()}"
    status.add_event(cluster, "RolloutAnnounced", text)
    content = {"priority": "P4", "incident": f"rollout {rollout.name}", "title": text, "cluster": cluster.name}
    return {"announced_at": now.isoformat(), "failed_targets": send(targets, content, sender)}


def tell(
    cluster: models.Cluster | None,
    rollout: models_rollouts.Rollout,
    reason: str,
    text: str,
    targets: Sequence[str],
    sender: Sender | None,
    warning: bool = False,
) -> dict[str, Any]:
    """A notice after a step (a wave done, a halt, a rollback): cluster event and pages. Caller commits."""
    if cluster is not None:
        status.add_event(cluster, reason, text, "Warning" if warning else "Normal")
    content = {"priority": "P3" if warning else "P4", "incident": f"rollout {rollout.name}", "title": text}
    return {"told": reason, "failed_targets": send(targets, content, sender)}
