"""The incident lifecycle's transition table and the one function that moves an incident (CONTRIBUTING.md, "State").

``transition(incident, to_state, actor=, reason=, at=)`` validates the move against ``TABLE``, stamps the
times the SLA report reads (``acknowledged_at`` is also the first response unless a note came first,
``mitigated_at``, ``resolved_at``) and returns the timeline entry to record. Nothing else assigns
``state``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Protocol

from velyrix import errors
from velyrix.ops.noc import states as s

# current state -> states it may move to, with why each move exists
TABLE: dict[str, frozenset[str]] = {
    # someone owns it; or the impact went away by itself (alert group resolved); or closed at once
    s.OPEN: frozenset({s.ACKNOWLEDGED, s.MITIGATED, s.RESOLVED}),
    # impact removed; or closed
    s.ACKNOWLEDGED: frozenset({s.MITIGATED, s.RESOLVED}),
    # closed; or the impact came back (the alert group fires again)
    s.MITIGATED: frozenset({s.RESOLVED, s.OPEN}),
    # postmortem written; or the same cause came back
    s.RESOLVED: frozenset({s.POSTMORTEM, s.OPEN}),
    # terminal
    s.POSTMORTEM: frozenset(),
}


class InvalidIncidentTransitionError(errors.ConflictError):
    code = "invalid_incident_transition"
    template = "incident {number} is {from_state}: it cannot become {to_state}"


class IncidentLike(Protocol):
    """What ``transition`` needs of an incident (the ``IncidentState`` row, or a test's dataclass)."""

    number: str
    state: str
    acknowledged_at: dt.datetime | None
    first_response_at: dt.datetime | None
    last_update_at: dt.datetime | None
    mitigated_at: dt.datetime | None
    resolved_at: dt.datetime | None


@dataclass(frozen=True)
class TimelineEntry:
    """One line of an incident's timeline: ``kind`` is ``state``, ``note``, ``page`` or ``opened``."""

    kind: str
    at: dt.datetime
    actor: str
    text: str
    detail: dict[str, Any] = field(default_factory=dict)


def allowed(from_state: str, to_state: str) -> bool:
    """Whether the table allows ``from_state`` -> ``to_state``."""
    return to_state in TABLE.get(from_state, frozenset())


def transition(incident: IncidentLike, to_state: str, *, actor: str, reason: str, at: dt.datetime) -> TimelineEntry:
    """Move ``incident`` to ``to_state`` at ``at`` (UTC) and return the timeline entry to record.

    Raises ``UnknownNameError`` for an unknown state, ``InvalidIncidentTransitionError`` (409) for a move
    the table forbids, ``InvalidInputError`` without an actor or reason.
    """
    if to_state not in s.STATES:
        raise errors.UnknownNameError("incident state", to_state, s.STATES)
    if not actor or not reason:
        raise errors.InvalidInputError("an incident transition needs an actor and a reason")
    if not allowed(incident.state, to_state):
        raise InvalidIncidentTransitionError(number=incident.number, from_state=incident.state, to_state=to_state)
    before = incident.state
    incident.state = to_state
    if to_state == s.ACKNOWLEDGED:
        incident.acknowledged_at = at
        incident.first_response_at = incident.first_response_at or at
        incident.last_update_at = at
    elif to_state == s.MITIGATED:
        incident.mitigated_at = at
    elif to_state == s.RESOLVED:
        incident.resolved_at = at
    elif to_state == s.OPEN:  # reopened: the impact is back
        incident.mitigated_at = incident.resolved_at = None
    return TimelineEntry("state", at, actor, reason, {"from": before, "to": to_state})


def note(incident: IncidentLike, *, actor: str, text: str, at: dt.datetime) -> TimelineEntry:
    """An update by the NOC: counts as the first response when none was given, and resets the update
    timer. Returns the timeline entry."""
    if not text.strip():
        raise errors.InvalidInputError("an incident note needs text", hint="say what is known and what is next")
    incident.first_response_at = incident.first_response_at or at
    incident.last_update_at = at
    return TimelineEntry("note", at, actor, text)
