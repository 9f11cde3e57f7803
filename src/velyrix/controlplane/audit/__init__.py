"""Audit events: every mutation attempt writes one, successful ones in the same transaction as the
change, refused ones (401/403/404/409/412/422...) in their own. The API has no route that changes or
deletes an event, and the database refuses UPDATE and DELETE on the table (trigger, migration 0001).

Each event is also a leaf of the audit log's Merkle tree (``log``), sequenced when its transaction
commits; ``checkpoints`` signs the tree's size and root, ``verify`` finds the first missing or altered
event of a log copy against the checkpoints a client saw.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import orm

from velyrix.controlplane.audit import log
from velyrix.controlplane.auth.principals import Principal
from velyrix.controlplane.db import models

MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_UNSTORABLE = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")


def storable(text: str, limit: int) -> str:
    """``text`` as a column can hold it: control characters and lone surrogates (which PostgreSQL refuses)
    escaped as ``\\xNN`` / ``\\uNNNN``, cut to ``limit`` characters (the column's length)."""
    clean = _UNSTORABLE.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}", text
    )
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 256 else f"\\u{code:04x}"


@dataclass(frozen=True)
class RequestInfo:
    """What the audit record needs to know about the request itself."""

    request_id: str
    source_address: str | None
    method: str
    path: str


def record(
    session: orm.Session,
    info: RequestInfo,
    principal: Principal | None,
    *,
    action: str,
    target: str,
    outcome: str = "success",
    status_code: int = 200,
    error_code: str | None = None,
    detail: dict[str, Any] | None = None,
    tenant_id: str | None = None,
) -> models.AuditEvent:
    """Add one audit event to ``session`` (the caller commits, with the change it describes).

    ``outcome`` is ``success``, ``replayed``, ``denied`` or ``error``. ``tenant_id`` defaults to the
    principal's tenant (pass it for provider actions on a tenant, e.g. creating one).
    """
    event = models.AuditEvent(
        at=models.utcnow(),
        actor=principal.actor if principal else "anonymous",
        key_id=principal.key_id if principal else None,
        tenant_id=tenant_id if tenant_id is not None else (principal.tenant_id if principal else None),
        action=storable(action, 64),
        target=storable(target, 200),
        request_id=info.request_id,
        source_address=info.source_address,
        outcome=outcome,
        status_code=status_code,
        error_code=error_code,
        # through JSON once: the stored value and the Merkle leaf (log.canonical) see the same data
        detail=json.loads(
            json.dumps({"method": info.method, "path": storable(info.path, 2048), **(detail or {})}, default=str)
        ),
    )
    session.add(event)
    log.enqueue(session, event)
    return event


log.install()
