"""The NOC's timers of an incident, against its tenant's SLA contract (``ops.sla.contract_store``; the
catalog's default contract for the provider's own incidents): the first response (``first_response_min``
of its priority, P1 15 min in ``catalog/data/sla.toml``), then an update every ``update_every_min``, and
the time open until resolved (the contracts set no resolve target: shown, not judged). Seconds are of
the control plane's clock (``fleet.clock``: the twin's accelerated one under ``velyrix up``).

Input: incidents as ``ops.noc.incidents.out`` shapes them (datetimes in UTC). Output: ``Timer`` rows
the templates show; ``running`` timers count on in the page (``static/noc-timers.js``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from velyrix.controlplane import scoping
from velyrix.ops.sla import contract_store, contracts


@dataclass(frozen=True)
class Timer:
    """One timer: what it measures, seconds elapsed (to its stop, or to now while ``running``), its
    target in seconds (None: none set), and the verdict: ``met``, ``breached``, ``running`` or ``due``
    (running past its target)."""

    name: str
    elapsed_s: int
    target_s: int | None
    running: bool

    @property
    def verdict(self) -> str:
        late = self.target_s is not None and self.elapsed_s > self.target_s
        if self.running:
            return "due" if late else "running"
        return "breached" if late else "met"


def targets(scope: scoping.Scope, tenant_ids: Iterable[str | None]) -> dict[str | None, contracts.Contract]:
    """The contract of each tenant (None: the provider's own incidents, the catalog default)."""
    found: dict[str | None, contracts.Contract] = {}
    for tenant_id in set(tenant_ids):
        found[tenant_id] = contract_store.contract_for(scope.session, tenant_id) if tenant_id else contracts.default()
    return found


def _seconds(start: dt.datetime, stop: dt.datetime) -> int:
    start = start if start.tzinfo else start.replace(tzinfo=dt.UTC)
    stop = stop if stop.tzinfo else stop.replace(tzinfo=dt.UTC)
    return max(0, int((stop - start).total_seconds()))


def timers(incident: Mapping[str, Any], contract: contracts.Contract, now: dt.datetime) -> list[Timer]:
    """First response, next update (once acknowledged, until resolved) and time open, in that order."""
    opened = incident["opened_at"]
    resolved = incident["resolved_at"]
    target = contract.response.get(str(incident["priority"]))
    first = incident["first_response_at"] or incident["acknowledged_at"]
    out = [
        Timer(
            "first response",
            _seconds(opened, first or resolved or now),
            target.first_response_min * 60 if target else None,
            first is None and resolved is None,
        )
    ]
    if first is not None and resolved is None:
        since = incident["last_update_at"] or first
        out.append(Timer("next update", _seconds(since, now), target.update_every_min * 60 if target else None, True))
    out.append(Timer("open", _seconds(opened, resolved or now), None, resolved is None))
    return out
