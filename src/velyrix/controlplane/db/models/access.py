"""Access and connectivity (migration ``0021``): each tenant's SSH certificate authority, the SSH
public keys of its users, the tenant's approvals of provider actions on self-operated clusters
(``controlplane.access``), and the clusters' connectivity objects (``ops/connectivity_routes.py``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class SshAuthority(Base):
    """A tenant's SSH user CA: its public key line (what jump host and nodes trust) and private key
    (OpenSSH PEM, kept only sealed: ``access/ca_sealing.py``, migration ``0024``; it signs the tenant's
    short-lived certificates and never leaves the control plane)."""

    __tablename__ = "ssh_authorities"
    id_prefix = "sca"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(sa.ForeignKey("tenants.id"), unique=True)
    """NULL: the CA of the provider's operators (``vlx-operator`` certificates)."""
    public_key: Mapped[str] = mapped_column(sa.String(400))
    sealed_private_key: Mapped[bytes] = mapped_column(sa.LargeBinary)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class SshUserKey(Base):
    """One SSH public key of a tenant's user (``TYPE BASE64``); certificates are signed for these only."""

    __tablename__ = "ssh_user_keys"
    __table_args__ = (sa.UniqueConstraint("user_id", "fingerprint", name="uq_ssh_user_keys_user_fingerprint"),)
    id_prefix = "sshk"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("users.id"), index=True)
    public_key: Mapped[str] = mapped_column(sa.String(16384))
    fingerprint: Mapped[str] = mapped_column(sa.String(64))
    """``SHA256:<base64>`` as ``ssh-keygen -l`` prints it."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class AccessApproval(Base):
    """A tenant's approval of one provider action on a self-operated cluster, single use until
    ``expires_at`` (``access.approvals``)."""

    __tablename__ = "access_approvals"
    id_prefix = "apv"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    cluster_id: Mapped[str] = mapped_column(sa.String(32), index=True)
    action: Mapped[str] = mapped_column(sa.String(64))
    approved_by: Mapped[str] = mapped_column(sa.String(200))
    reason: Mapped[str] = mapped_column(sa.String(500), default="")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column()
    used_at: Mapped[dt.datetime | None] = mapped_column()
    used_by: Mapped[str | None] = mapped_column(sa.String(200))


class ConnectivityObject(Base):
    """A cluster's private link, BGP session or VPN as declared (``spec``, passwords removed) and
    planned (``plan``: its price lines), replaced as a set by ``PUT /v1/clusters/{id}/connectivity``."""

    __tablename__ = "connectivity_objects"
    __table_args__ = (sa.UniqueConstraint("cluster_id", "address", name="uq_connectivity_cluster_address"),)
    id_prefix = "cnx"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    cluster_id: Mapped[str] = mapped_column(sa.ForeignKey("clusters.id"), index=True)
    address: Mapped[str] = mapped_column(sa.String(200))
    kind: Mapped[str] = mapped_column(sa.String(32))
    spec: Mapped[dict[str, Any]] = mapped_column()
    plan: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
