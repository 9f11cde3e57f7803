"""Customer-managed keys (migration ``0011``): a tenant's key-encryption key that lives in its HSM or key
manager, the tenant's revocable grant to use it, and each volume's data key wrapped by it.

Nothing here decrypts a volume: a key row holds only where the key lives (``locator``, no secret); the
grant's credential (a PKCS#11 PIN, a KMIP client certificate) is sealed with the region's grant-sealing key
that lives outside the database (``velyrix.controlplane.cmk.sealing``); a data key is stored only as the
AES-256-GCM ciphertext the tenant's key made of it (docs/keys.md, "Customer-managed keys").
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class CustomerKey(Base):
    """A tenant's key-encryption key: where it lives and its state (``active``, ``destroyed``)."""

    __tablename__ = "customer_keys"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "name", name="uq_customer_keys_tenant_name"),)
    id_prefix = "cmk"
    tenancy: ClassVar[str] = "own"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    name: Mapped[str] = mapped_column(sa.String(63))
    provider: Mapped[str] = mapped_column(sa.String(16))
    """``pkcs11`` or ``kmip``."""
    locator: Mapped[dict[str, Any]] = mapped_column()
    """Where the key lives, without any secret: PKCS#11 module, token and key label; KMIP host, port, key id
    and the CA certificate (PEM) the key manager's TLS certificate must chain to."""
    key_version: Mapped[int] = mapped_column(default=1)
    """Bumped by every rotation (each rotation names a new key in the HSM or key manager)."""
    state: Mapped[str] = mapped_column(sa.String(16), default="active")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    rotated_at: Mapped[dt.datetime | None] = mapped_column()
    destroyed_at: Mapped[dt.datetime | None] = mapped_column()
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__ = {"version_id_col": version}


class CustomerKeyGrant(Base):
    """The tenant's grant to use its key: the credential sealed (never stored in clear); revoked by erasing it."""

    __tablename__ = "customer_key_grants"
    id_prefix = "cmkg"
    tenancy: ClassVar[str] = "own"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    key_id: Mapped[str] = mapped_column(sa.ForeignKey("customer_keys.id"), index=True)
    sealed_credential: Mapped[bytes | None] = mapped_column(sa.LargeBinary(16384))
    """Nonce (12 bytes) + AES-256-GCM ciphertext of the credential's JSON; ``None`` once revoked."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column()


class VolumeDataKey(Base):
    """One volume's AES-256-GCM data key, stored only wrapped by its tenant's key."""

    __tablename__ = "volume_data_keys"
    id_prefix = "vdk"
    tenancy: ClassVar[str] = "own"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    volume_id: Mapped[str] = mapped_column(sa.String(32), unique=True)
    key_id: Mapped[str] = mapped_column(sa.ForeignKey("customer_keys.id"), index=True)
    key_version: Mapped[int] = mapped_column()
    """The version of the tenant's key that made ``wrapped``."""
    wrapped: Mapped[bytes] = mapped_column(sa.LargeBinary(256))
    """Nonce (12 bytes) + ciphertext (32 bytes) + GCM tag (16 bytes), made inside the HSM or key manager."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    rewrapped_at: Mapped[dt.datetime | None] = mapped_column()
