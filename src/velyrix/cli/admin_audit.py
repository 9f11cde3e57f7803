"""Audit events of the out-of-band admin commands (``velyrix admin ...``), which write the database directly."""

from __future__ import annotations

import secrets
from typing import Any


def record(session: Any, action: str, target: str, tenant_id: str | None) -> None:
    """One audit event of an out-of-band admin command (``velyrix admin ...``) in ``session``, by the actor
    ``cli:velyrix-admin``."""
    from velyrix.controlplane import audit

    info = audit.RequestInfo(
        request_id="cli_" + secrets.token_hex(10), source_address="local", method="CLI", path=f"velyrix admin {action}"
    )
    event = audit.record(
        session,
        info,
        None,
        action=action,
        target=target,
        status_code=201,
        tenant_id=tenant_id,
    )
    event.actor = "cli:velyrix-admin"
