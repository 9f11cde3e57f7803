"""The intake routes' access to the database, through the principal's ``Scope`` (provider keys only: a
tenant key has no ``incidents:write``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from velyrix import errors
from velyrix.controlplane import scoping
from velyrix.ops.noc import intake


def alertmanager(scope: scoping.Scope, payload: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    """``intake.alertmanager`` in the scope's session."""
    if not scope.principal.is_provider:
        raise errors.PermissionDeniedError(scope="incidents:write")
    return intake.alertmanager(scope.session, payload, now)
