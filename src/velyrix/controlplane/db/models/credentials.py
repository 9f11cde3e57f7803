"""The credential generation (migration ``0022``): one row whose ``generation`` the database itself
moves on (triggers, in the same transaction) at every change that can take rights away from a
credential: an API key updated (revoked, rotated, re-scoped) or deleted, a session ended or its second
factor changed (its last use moving forward does not count: migration ``0025``), a user deactivated or
given another role, a tenant's identity policy changed.
The API caches verified principals and checks this one number on every request (``identity/verified.py``)."""

from __future__ import annotations

from typing import ClassVar

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base

WATCHED_TABLES = ("api_keys", "user_sessions", "users", "tenant_identity_policies")
"""The tables whose triggers (named ``<table>_credential_generation...``) move the generation on."""


class CredentialGeneration(Base):
    """The single row (``id`` 1) holding the generation; written only by the triggers of ``0022``."""

    __tablename__ = "credential_generation"
    tenancy: ClassVar[str] = "global"

    id: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
    generation: Mapped[int] = mapped_column(sa.BigInteger, default=0)
