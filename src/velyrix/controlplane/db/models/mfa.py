"""Second-factor ceremonies in flight (migration ``0014``): each WebAuthn challenge the control plane
handed out, bound to one user and one purpose (registering a key, the second factor of a login, a
step-up), single use, five minutes. Only the challenge's SHA-256 is kept: the browser's signed client
data carries the challenge itself, which must hash to an unspent row."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class MfaChallenge(Base):
    """One WebAuthn challenge: ``purpose`` is ``register``, ``login`` or ``step_up``; ``session_id`` is
    the browser session it was asked for (register, step-up) and ``flow_id`` the pending login (login)."""

    __tablename__ = "mfa_challenges"
    id_prefix = "chl"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    challenge_sha256: Mapped[str] = mapped_column(sa.String(64), unique=True)
    purpose: Mapped[str] = mapped_column(sa.String(16))
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("users.id"), index=True)
    session_id: Mapped[str | None] = mapped_column(sa.String(32))
    flow_id: Mapped[str | None] = mapped_column(sa.String(32))
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column()
    used_at: Mapped[dt.datetime | None] = mapped_column()
