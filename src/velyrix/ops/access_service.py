"""What the access routes do (``ops/access_routes.py``), on the principal's scoped view of the
database: a user's certificate, a tenant's approval, an operator's certificate behind the gate with a
NOC incident for a break-glass. Each success records one audit event; a refusal's event is written and
committed by ``controlplane.access`` before its ``AccessError`` is raised."""

from __future__ import annotations

from typing import Any

from velyrix import errors
from velyrix.controlplane import audit, scoping
from velyrix.controlplane.access import approvals, certificates
from velyrix.controlplane.db import models
from velyrix.fleet import clock
from velyrix.ops.noc import incidents, lifecycle


def _out(issued: certificates.Issued, authority: str) -> dict[str, Any]:
    return {
        "certificate": issued.certificate,
        "serial": issued.serial,
        "key_id": issued.key_id,
        "principals": list(issued.principals),
        "expires_at": issued.expires_at,
        "authority": authority,
    }


def user_certificate(
    scope: scoping.Scope,
    info: audit.RequestInfo,
    *,
    cluster_id: str,
    user_id: str,
    public_key: str,
    root: bool,
    valid_for_s: int,
) -> dict[str, Any]:
    """Register the user's key (idempotent) and sign it for the cluster's nodes."""
    tenant_id = scope.principal.tenant_id
    if tenant_id is None:
        raise errors.PermissionDeniedError("certificates are for a tenant's users", scope="access:certify")
    cluster = scope.get(models.Cluster, cluster_id, "cluster")
    key = certificates.add_user_key(scope.session, tenant_id, user_id, public_key)
    issued = certificates.issue(
        scope.session,
        info,
        scope.principal,
        cluster_id=cluster.id,
        user_id=user_id,
        fingerprint_=key.fingerprint,
        root=root,
        valid_for_s=valid_for_s,
    )
    return _out(issued, certificates.authority(scope.session, tenant_id).public_key)


def approval(
    scope: scoping.Scope, info: audit.RequestInfo, cluster_id: str, *, action: str, valid_for_s: int, reason: str
) -> dict[str, Any]:
    """The tenant's approval of one provider action on its cluster."""
    cluster = scope.get(models.Cluster, cluster_id, "cluster")
    row = approvals.grant(
        scope.session, info, scope.principal, cluster, action=action, valid_for_s=valid_for_s, reason=reason
    )
    return {
        "id": row.id,
        "cluster_id": row.cluster_id,
        "action": row.action,
        "approved_by": row.approved_by,
        "expires_at": row.expires_at,
    }


def notify_break_glass(
    scope: scoping.Scope, info: audit.RequestInfo, cluster: models.Cluster, node: models.Node, reason: str
) -> str:
    """A NOC incident of the tenant's cluster recording the break-glass (the tenant's incident list and
    status page show it; the NOC's escalation carries it)."""
    now = clock.now()
    inc, _ = incidents.open_incident(
        scope.session,
        key=f"break-glass:{node.id}:{info.request_id}",
        priority="P3",
        title=f"Break-glass access to node {node.name} by {scope.principal.name}",
        tenant_id=cluster.tenant_id,
        cluster_id=cluster.id,
        source="access",
        at=now,
        detail=reason,
    )
    entry = lifecycle.TimelineEntry("note", now, scope.principal.actor, f"break-glass: {reason}", {"node": node.name})
    incidents.record(scope.session, inc, entry)
    return inc.number


def operator_certificate(
    scope: scoping.Scope,
    info: audit.RequestInfo,
    node_id: str,
    *,
    public_key: str,
    approval_id: str | None,
    break_glass_reason: str | None,
    valid_for_s: int,
) -> dict[str, Any]:
    """An operator's certificate to a node, after ``approvals.gate``."""
    node = scope.get(models.Node, node_id, "node")
    cluster = scope.session.get(models.Cluster, node.cluster_id) if node.cluster_id else None
    if cluster is None:
        raise errors.ConflictError(f"node '{node.name}' belongs to no cluster", hint="use the fleet's own access")
    decision = approvals.gate(
        scope.session,
        info,
        scope.principal,
        cluster,
        action="ssh",
        approval_id=approval_id,
        break_glass_reason=break_glass_reason,
    )
    incident = (
        notify_break_glass(scope, info, cluster, node, decision.reason) if decision.via == "break_glass" else None
    )
    issued = certificates.issue_operator(
        scope.session, info, scope.principal, node, public_key, decision, valid_for_s=valid_for_s
    )
    authority = certificates.authority(scope.session, None).public_key
    return {**_out(issued, authority), "via": decision.via, "incident": incident}
