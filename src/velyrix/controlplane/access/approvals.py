"""The gate in front of provider actions on a tenant's nodes (``modes``): on a managed cluster the
provider acts; on a self-operated one it needs the tenant's approval (single use, time-limited, made by
a tenant owner or admin) or a break-glass with a reason. Every decision is an audit event; a break-glass
also tells the tenant (the caller notifies through the NOC: ``ops/access_routes.py``)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane import audit
from velyrix.controlplane.access import modes
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import access as tables

MIN_REASON_CHARS = 12
"""A break-glass reason says what is wrong: at least this many characters, not counting white space."""
MAX_APPROVAL_S = 7 * 24 * 3600
ACTIONS = ("ssh", "bmc", "reboot", "reimage", "drain", "labels")
"""Provider actions a tenant can approve (the gate's ``action``)."""


@dataclass(frozen=True)
class Decision:
    """Why a provider action may go ahead: ``via`` is ``managed``, ``approval`` or ``break_glass``."""

    via: str
    cluster_id: str
    tenant_id: str
    approval_id: str | None = None
    reason: str = ""


def grant(
    session: orm.Session,
    info: audit.RequestInfo,
    principal: Principal,
    cluster: models.Cluster,
    *,
    action: str,
    valid_for_s: int,
    reason: str = "",
) -> tables.AccessApproval:
    """The tenant (``principal``, an owner or admin of ``cluster``'s tenant) approves one provider
    ``action`` on ``cluster`` for ``valid_for_s`` seconds. Audited; the caller commits."""
    if action not in ACTIONS:
        raise errors.UnknownNameError("provider action", action, ACTIONS)
    if not 60 <= valid_for_s <= MAX_APPROVAL_S:
        raise errors.InvalidInputError(f"valid_for_s = {valid_for_s} is out of range", hint=f"60 to {MAX_APPROVAL_S}")
    row = tables.AccessApproval(
        tenant_id=cluster.tenant_id,
        cluster_id=cluster.id,
        action=action,
        approved_by=principal.actor,
        reason=reason[:500],
        expires_at=models.utcnow() + dt.timedelta(seconds=valid_for_s),
    )
    session.add(row)
    session.flush()
    audit.record(
        session,
        info,
        principal,
        action="access.approval.grant",
        target=cluster.id,
        detail={"approval_id": row.id, "action": action, "expires_at": row.expires_at.isoformat()},
    )
    return row


def _refuse(
    session: orm.Session, info: audit.RequestInfo, principal: Principal, cluster: models.Cluster, action: str, why: str
) -> errors.AccessError:
    audit.record(
        session,
        info,
        principal,
        action="access.provider.refuse",
        target=cluster.id,
        outcome="denied",
        status_code=403,
        error_code="access_approval_required",
        tenant_id=cluster.tenant_id,
        detail={"action": action, "why": why},
    )
    session.commit()
    return errors.AccessError(
        f"cluster '{cluster.id}' is self-operated: {why}",
        reason="approval_required",
        hint="ask the tenant for an approval (POST /v1/clusters/{id}/access-approvals) and pass its id, "
        "or break the glass with a reason",
    )


def gate(
    session: orm.Session,
    info: audit.RequestInfo,
    principal: Principal,
    cluster: models.Cluster,
    *,
    action: str,
    approval_id: str | None = None,
    break_glass_reason: str | None = None,
) -> Decision:
    """May provider ``principal`` do ``action`` on ``cluster``'s nodes? Returns the ``Decision``
    (consuming the approval) or raises ``AccessError`` ``access_approval_required`` (403, audited and
    committed). The caller records a granted decision in the audit event of the action it allows
    (one event per request) and commits both together."""
    mode = str(cluster.spec.get("operating_mode") or modes.MANAGED)
    if not modes.rights(mode).provider_needs_approval:
        return Decision("managed", cluster.id, cluster.tenant_id)
    if approval_id is not None:
        row = session.get(tables.AccessApproval, approval_id)
        now = models.utcnow()
        fits = row is not None and row.cluster_id == cluster.id and row.action == action
        if not fits or row is None:
            raise _refuse(
                session,
                info,
                principal,
                cluster,
                action,
                f"approval '{approval_id}' is not one for {action} on this cluster",
            )
        if row.used_at is not None or row.expires_at <= now:
            raise _refuse(session, info, principal, cluster, action, f"approval '{approval_id}' is used or expired")
        row.used_at, row.used_by = now, principal.actor
        return Decision("approval", cluster.id, cluster.tenant_id, approval_id=row.id)
    reason = (break_glass_reason or "").strip()
    if not reason:
        raise _refuse(session, info, principal, cluster, action, "the tenant's approval or a break-glass is needed")
    if len("".join(reason.split())) < MIN_REASON_CHARS:
        raise errors.InvalidInputError(
            "a break-glass needs a reason that says what is wrong",
            hint=f"at least {MIN_REASON_CHARS} characters, e.g. 'node unreachable, customer paged, no answer'",
        )
    return Decision("break_glass", cluster.id, cluster.tenant_id, reason=reason[:500])
