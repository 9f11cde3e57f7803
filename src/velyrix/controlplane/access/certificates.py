"""Issuing SSH certificates to a tenant's users: the tenant's CA (made on first use), the users'
registered public keys, and the operating mode's rule on root (``modes``). Every issue and refusal is
an audit event (the caller commits)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane import audit
from velyrix.controlplane.access import approvals, ca_sealing, modes, ssh_ca
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import access as tables
from velyrix.controlplane.db.models import identity


@dataclass(frozen=True)
class Issued:
    """A signed certificate (OpenSSH line, for ``~/.ssh/id_ed25519-cert.pub``) and what it allows."""

    certificate: str
    serial: int
    key_id: str
    principals: tuple[str, ...]
    expires_at: dt.datetime


def fingerprint(public_key: str) -> str:
    """``SHA256:<base64 without padding>`` of an OpenSSH public key line, as ``ssh-keygen -l`` prints."""
    blob = base64.b64decode(public_key.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def authority(session: orm.Session, tenant_id: str | None) -> ssh_ca.CertificateAuthority:
    """The tenant's CA (``None``: the provider operators' CA), created (and stored) on first use."""
    col = tables.SshAuthority.tenant_id
    row = session.scalar(sa.select(tables.SshAuthority).where(col.is_(None) if tenant_id is None else col == tenant_id))
    if row is None:
        made = ssh_ca.new_authority(f"velyrix-ca tenant:{tenant_id or 'provider'}")
        sealed = ca_sealing.seal(made.private_key_pem, tenant_id)
        row = tables.SshAuthority(tenant_id=tenant_id, public_key=made.public_key, sealed_private_key=sealed)
        session.add(row)
        session.flush()
    pem = ca_sealing.unseal(row.sealed_private_key, tenant_id)
    return ssh_ca.CertificateAuthority(public_key=row.public_key, private_key_pem=pem)


def add_user_key(session: orm.Session, tenant_id: str, user_id: str, public_key: str) -> tables.SshUserKey:
    """Register ``public_key`` for the tenant's user ``user_id`` (idempotent per fingerprint).
    ``NotFoundError`` for a user of another tenant; ``InvalidInputError`` for a malformed key."""
    user = session.get(identity.User, user_id)
    if user is None or user.tenant_id != tenant_id:
        raise errors.NotFoundError(kind="user", name=user_id)
    normal = ssh_ca.parse_public_key(public_key)
    fp = fingerprint(normal)
    row = session.scalar(
        sa.select(tables.SshUserKey).where(tables.SshUserKey.user_id == user_id, tables.SshUserKey.fingerprint == fp)
    )
    if row is None:
        row = tables.SshUserKey(tenant_id=tenant_id, user_id=user_id, public_key=normal, fingerprint=fp)
        session.add(row)
        session.flush()
    return row


def _cluster_mode(cluster: models.Cluster) -> str:
    return str(cluster.spec.get("operating_mode") or modes.MANAGED)


def issue(
    session: orm.Session,
    info: audit.RequestInfo,
    principal: Principal,
    *,
    cluster_id: str,
    user_id: str,
    fingerprint_: str,
    root: bool = False,
    valid_for_s: int = ssh_ca.DEFAULT_VALIDITY_S,
) -> Issued:
    """Sign the registered key ``fingerprint_`` of ``user_id`` for the nodes of ``cluster_id``.

    ``root`` asks for the ``root`` login: granted only on a self-operated cluster to a user whose role
    the mode allows (``modes.RIGHTS``), else ``AccessError`` ``access_tenant_root_refused`` (403, audited).
    A cluster or user of another tenant is ``NotFoundError`` (404)."""
    tenant_id = principal.tenant_id
    cluster = session.get(models.Cluster, cluster_id)
    user = session.get(identity.User, user_id)
    if tenant_id is None or cluster is None or cluster.tenant_id != tenant_id:
        raise errors.NotFoundError(kind="cluster", name=cluster_id)
    if user is None or user.tenant_id != tenant_id or not user.active:
        raise errors.NotFoundError(kind="user", name=user_id)
    key = session.scalar(
        sa.select(tables.SshUserKey).where(
            tables.SshUserKey.user_id == user_id, tables.SshUserKey.fingerprint == fingerprint_
        )
    )
    if key is None:
        raise errors.NotFoundError(kind="SSH key", name=fingerprint_)
    mode = _cluster_mode(cluster)
    if root and not (modes.may_get_root(mode, user.role) and modes.may_get_root(mode, principal.role)):
        weaker = user.role if not modes.may_get_root(mode, user.role) else principal.role
        why = modes.rights(mode).why if mode == modes.MANAGED else f"role '{weaker}' may not get root"
        audit.record(
            session,
            info,
            principal,
            action="access.certificate.refuse",
            target=cluster_id,
            outcome="denied",
            status_code=403,
            error_code="access_tenant_root_refused",
            detail={"user_id": user_id, "operating_mode": mode, "why": why},
        )
        session.commit()
        raise errors.AccessError(
            f"root refused on cluster '{cluster.name}': {why}",
            reason="tenant_root_refused",
            hint="ask for a certificate without root, or an owner of a self-operated cluster",
        )
    principals = (ssh_ca.tenant_principal(tenant_id), ssh_ca.ROOT if root else ssh_ca.USER)
    key_id = f"user:{user_id} ({user.user_name}) tenant:{tenant_id} cluster:{cluster_id}"
    cert, serial, expires = ssh_ca.sign_user(
        authority(session, tenant_id), key.public_key, key_id=key_id, principals=principals, valid_for_s=valid_for_s
    )
    audit.record(
        session,
        info,
        principal,
        action="access.certificate.issue",
        target=cluster_id,
        detail={
            "user_id": user_id,
            "serial": serial,
            "principals": list(principals),
            "fingerprint": fingerprint_,
            "expires_at": expires.isoformat(),
            "operating_mode": mode,
        },
    )
    return Issued(cert, serial, key_id, principals, expires)


OPERATOR_MAX_S = 3600
"""An operator's certificate to a tenant's node lives an hour at most."""


def issue_operator(
    session: orm.Session,
    info: audit.RequestInfo,
    principal: Principal,
    node: models.Node,
    public_key: str,
    decision: approvals.Decision,
    valid_for_s: int = 900,
) -> Issued:
    """Sign ``public_key`` of provider ``principal`` with the operators' CA for the ``vlx-operator``
    login on ``node``, after ``approvals.gate`` allowed it (``decision``). One audit event
    (``access.break_glass`` for a break-glass, naming the reason); the caller commits."""
    if valid_for_s > OPERATOR_MAX_S:
        raise errors.InvalidInputError(f"valid_for_s = {valid_for_s} is out of range", hint=f"at most {OPERATOR_MAX_S}")
    key_id = f"{principal.actor} node:{node.name} via:{decision.via}"
    principals = (ssh_ca.OPERATOR,)
    cert, serial, expires = ssh_ca.sign_user(
        authority(session, None), public_key, key_id=key_id, principals=principals, valid_for_s=valid_for_s
    )
    audit.record(
        session,
        info,
        principal,
        action="access.break_glass" if decision.via == "break_glass" else "access.operator_certificate.issue",
        target=node.id,
        tenant_id=decision.tenant_id,
        detail={
            "serial": serial,
            "node": node.name,
            "via": decision.via,
            "approval_id": decision.approval_id,
            "reason": decision.reason,
            "expires_at": expires.isoformat(),
        },
    )
    return Issued(cert, serial, key_id, principals, expires)
