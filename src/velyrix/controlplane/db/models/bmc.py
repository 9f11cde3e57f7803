"""Where each node's BMC answers and how to log in to it (migration ``0019``). The password is kept only
sealed (AES-256-GCM under the region's BMC-credential key, a file beside the signing keys, never in the
database; ``velyrix.controlplane.bmc_credentials``), bound to the node's name, so a copy of the database
holds no usable credential and a sealed password cannot be moved to another node."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class BmcCredential(Base):
    """One node's BMC endpoint: base URL, ComputerSystem Id, user, sealed password, TLS verification."""

    __tablename__ = "bmc_credentials"
    id_prefix = "bmc"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    node_name: Mapped[str] = mapped_column(sa.String(128), unique=True)
    region: Mapped[str] = mapped_column(sa.String(64), index=True)
    address: Mapped[str] = mapped_column(sa.String(512))
    system_id: Mapped[str] = mapped_column(sa.String(256))
    username: Mapped[str] = mapped_column(sa.String(128))
    sealed_password: Mapped[bytes] = mapped_column(sa.LargeBinary)
    verify_tls: Mapped[bool] = mapped_column(default=True)
    node_type: Mapped[str] = mapped_column(sa.String(64), default="")
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
