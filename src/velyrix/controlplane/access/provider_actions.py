"""Provider actions on a tenant's nodes outside SSH (``approvals.gate`` for each): a provider operator's
change of a node of a self-operated cluster (``PATCH /v1/nodes/{id}``) needs the tenant's approval or a
break-glass with a reason; the server's own health actions (drain, reboot, quarantine, RMA of a failing
node: ``ops/remediation/node_reports.py``) stay allowed on such a node, and both are recorded for the
tenant: an audit event in the tenant's log and a Warning event on its cluster (what the tenant's cluster
status shows). The callers commit."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import orm

from velyrix.controlplane import audit, scoping, status
from velyrix.controlplane.access import approvals, modes
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models

HEALTH_ACTOR = Principal(
    key_id="server", name="health/control-plane", tenant_id=None, role="system", scopes=frozenset()
)
"""Who the audit log names for the server's own health actions."""
_HEALTH_OPS = ("drain", "reboot", "reset", "quarantine", "rma", "replace")
"""The first words of ``Remediator.handle``'s and ``node_reports.handle``'s results that act on the node."""


def cluster_of(scope: scoping.Scope, node: models.Node) -> models.Cluster | None:
    """The cluster ``node`` belongs to (None for a free node), read on the principal's scoped view's session."""
    return scope.session.get(models.Cluster, node.cluster_id) if node.cluster_id else None


def self_operated(cluster: models.Cluster | None) -> bool:
    """Whether provider actions on ``cluster``'s nodes go through the gate."""
    if cluster is None:
        return False
    return modes.rights(str(cluster.spec.get("operating_mode") or modes.MANAGED)).provider_needs_approval


def gate_node(
    scope: scoping.Scope,
    info: audit.RequestInfo,
    principal: Principal,
    node: models.Node,
    *,
    action: str,
    approval_id: str | None = None,
    break_glass_reason: str | None = None,
) -> approvals.Decision | None:
    """May provider ``principal`` do ``action`` (one of ``approvals.ACTIONS``) on ``node``? ``None`` when
    the gate does not apply (a tenant's own key, or a node in no cluster); else the ``Decision``, or
    ``AccessError`` ``access_approval_required`` (403, audited and committed by ``approvals.gate``). A
    break-glass puts a Warning event on the cluster naming the operator, the action and the reason."""
    if not principal.is_provider or node.cluster_id is None:
        return None
    session = scope.session
    cluster = session.get(models.Cluster, node.cluster_id)
    if cluster is None:
        return None
    decision = approvals.gate(
        session, info, principal, cluster, action=action, approval_id=approval_id, break_glass_reason=break_glass_reason
    )
    if decision.via == "break_glass":
        status.add_event(
            cluster,
            "ProviderBreakGlass",
            f"{principal.name} broke the glass for {action} on {node.name}: {decision.reason}",
            "Warning",
        )
    elif decision.via == "approval":
        status.add_event(
            cluster, "ProviderApprovedAction", f"{principal.name}: {action} on {node.name} ({decision.approval_id})"
        )
    return decision


def record_automatic(
    session: orm.Session, node: models.Node, cluster: models.Cluster | None, done: Sequence[str], why: str
) -> models.AuditEvent | None:
    """Record the server's own health actions ``done`` on ``node`` of a self-operated ``cluster`` for the
    tenant (``access.provider.automatic`` in its audit log, a ``ProviderHealthAction`` Warning on the
    cluster). ``None`` when there is nothing to tell (a managed cluster, or no action on the node)."""
    acted = [op for op in done if op.split(" ", 1)[0] in _HEALTH_OPS]
    if cluster is None or not acted or not self_operated(cluster):
        return None
    status.add_event(cluster, "ProviderHealthAction", f"{node.name}: " + "; ".join(acted) + f" ({why})", "Warning")
    info = audit.RequestInfo(request_id=f"health:{node.id}", source_address=None, method="-", path="-")
    return audit.record(
        session,
        info,
        HEALTH_ACTOR,
        action="access.provider.automatic",
        target=node.id,
        tenant_id=cluster.tenant_id,
        detail={"node": node.name, "cluster_id": cluster.id, "actions": acted, "why": why[:500]},
    )
