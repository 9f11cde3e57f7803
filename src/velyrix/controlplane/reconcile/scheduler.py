"""The Scheduler step: deliver what a cluster's ``scheduler`` names before it is Ready, follow its node list,
and take it away on destroy.

The control plane does not run schedulers itself: a ``SchedulerService`` does (the twin's is
``velyrix.ops.scheduler.twin_delivery``, a real Slurm per cluster on loopback), handed to the reconciler
(``Reconciler.scheduler``). Its calls never block: ``ensure`` starts or follows the work and says where it
stands; the step waits (``Step.wait``) until the delivery is ``ready`` (or ``artifacts``: manifests only)
and records it in ``scheduler_deliveries`` and the condition ``SchedulerReady``. Without a service the
condition says plainly that nothing was delivered, and the cluster is delivered without a scheduler.
"""

from __future__ import annotations

import sqlalchemy as sa

from velyrix.controlplane import status
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import scheduler as tables
from velyrix.controlplane.reconcile.scheduler_service import DELIVERING, FAILED, READY, REMOVED, Delivery, Target
from velyrix.controlplane.reconcile.steps import Step, fail

CONDITION = "SchedulerReady"


def _row(st: Step) -> tables.SchedulerDelivery | None:
    found: tables.SchedulerDelivery | None = st.session.scalar(
        sa.select(tables.SchedulerDelivery).where(tables.SchedulerDelivery.cluster_id == st.cluster.id)
    )
    return found


def _record(st: Step, kind: str, d: Delivery, nodes: list[str]) -> None:
    row = _row(st)
    if row is None:
        row = tables.SchedulerDelivery(cluster_id=st.cluster.id, tenant_id=st.cluster.tenant_id, kind=kind)
        st.session.add(row)
    row.kind, row.state, row.message = kind, d.state, d.message[:2000]
    row.env, row.artifacts, row.nodes = dict(d.env), dict(d.artifacts), nodes


def deliver(st: Step, names: list[str]) -> bool:
    """The Scheduler step for the live nodes ``names``: True once the cluster may be delivered (its scheduler
    is ready, it got its artifacts, or nobody delivers schedulers here); False while it is being delivered
    (the step waits) or when it failed (the cluster then fails with ``SchedulerFailed``)."""
    kind = str(st.cluster.spec.get("scheduler") or "")
    service = st.scheduler
    if service is None:
        why = f"this control plane delivers no scheduler; {kind} not started"
        status.set_condition(st.cluster, CONDITION, False, "NotDelivered", why)
        return True
    tenant = st.session.get(models.Tenant, st.cluster.tenant_id)
    target = Target(
        cluster_id=st.cluster.id,
        name=st.cluster.name,
        tenant=tenant.name if tenant is not None else st.cluster.tenant_id,
        kind=kind,
        nodes={n: st.members[n].node_type for n in names},
        fabric=st.cluster.spec.get("fabric"),
    )
    d = service.ensure(target)
    if d.state == DELIVERING:
        st.wait(1.0)
        return False
    before = _row(st)
    previous = (before.state, list(before.nodes)) if before is not None else None
    _record(st, kind, d, names)
    if d.state == FAILED:
        status.set_condition(st.cluster, CONDITION, False, "SchedulerFailed", d.message)
        fail(st, "SchedulerFailed", f"{kind} could not be delivered: {d.message}")
        return False
    reason = "Delivered" if d.state == READY else "ArtifactsOnly"
    status.set_condition(st.cluster, CONDITION, d.state == READY, reason, d.message)
    if previous != (d.state, names):
        status.add_event(st.cluster, f"Scheduler{reason}", d.message)
    return True


def remove(st: Step) -> bool:
    """On destroy: stop the cluster's scheduler; True once it is gone (or there was none)."""
    service = st.scheduler
    row = _row(st)
    if service is None or row is None or row.state == REMOVED:
        return True
    d = service.remove(st.cluster.id)
    if d.state == DELIVERING:
        st.wait(1.0)
        return False
    row.state, row.message, row.env = d.state, d.message[:2000], {}
    status.add_event(st.cluster, "SchedulerRemoved", d.message)
    return True
