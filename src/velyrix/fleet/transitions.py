"""The node lifecycle's transition table and the one function that performs every move (CONTRIBUTING.md, "State").

``transition(node, to_state, *, actor, reason, store)`` validates the move against the table of the
state variable it concerns (a provisioning state or a fleet stage: the names are disjoint), records
who, when and why, and saves node and record through ``store`` in one call. Nothing else in Velyrix
assigns ``provisioning_state`` or ``fleet_stage``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from velyrix import errors
from velyrix.fleet import clock
from velyrix.fleet import states as s

# Provisioning: current state -> states it may move to, with why each move exists.
PROVISIONING_TABLE: dict[str, frozenset[str]] = {
    # discovered through the driver; first thing to do is read its hardware
    s.ENROLLED: frozenset({s.INSPECTING, s.FAILED}),
    # inventory read: the node joins the pool, or the BMC/inventory is broken
    s.INSPECTING: frozenset({s.AVAILABLE, s.FAILED}),
    # allocated to a cluster; or re-inspected (after a part swap); or found broken while idle
    s.AVAILABLE: frozenset({s.ALLOCATED, s.INSPECTING, s.FAILED}),
    # provisioning starts; or the allocation is released before anything was written (scale-down,
    # cluster deleted while allocating) — nothing tenant-owned is on the node yet, so no sanitize
    s.ALLOCATED: frozenset({s.PROVISIONING, s.AVAILABLE, s.FAILED}),
    # delivered; or torn down mid-way (destroy, failed acceptance -> replace); or broken
    s.PROVISIONING: frozenset({s.ACTIVE, s.DEPROVISIONING, s.FAILED}),
    # taken back from the tenant (destroy, scale-down, replacement); or broken in service
    s.ACTIVE: frozenset({s.DEPROVISIONING, s.FAILED}),
    # tenant networks/storage detached: wipe it
    s.DEPROVISIONING: frozenset({s.SANITIZING, s.FAILED}),
    # wiped: back to the pool
    s.SANITIZING: frozenset({s.AVAILABLE, s.FAILED}),
    # after repair, re-inspect; a failed node that held tenant data is deprovisioned and sanitized first
    s.FAILED: frozenset({s.INSPECTING, s.DEPROVISIONING, s.SANITIZING}),
}

# Fleet stage: current stage -> stages it may move to.
STAGE_TABLE: dict[str, frozenset[str]] = {
    # burn-in passed -> sellable; failed -> quarantine for diagnosis, or straight to the vendor
    s.BURN_IN: frozenset({s.PRODUCTION, s.QUARANTINED, s.RMA, s.RETIRED}),
    # a health verdict or failed acceptance takes it out; end of life retires it
    s.PRODUCTION: frozenset({s.QUARANTINED, s.RETIRED}),
    # cleared (false alarm, transient) -> production; repaired in place -> burn-in again; bad part -> RMA
    s.QUARANTINED: frozenset({s.PRODUCTION, s.BURN_IN, s.RMA, s.RETIRED}),
    # repaired parts come back through burn-in; beyond repair -> retired
    s.RMA: frozenset({s.BURN_IN, s.RETIRED}),
    # terminal
    s.RETIRED: frozenset(),
}


class NodeLike(Protocol):
    """What ``transition`` needs of a node: a name and the two state variables."""

    name: str
    provisioning_state: str
    fleet_stage: str


@dataclass(frozen=True)
class TransitionRecord:
    """One move of one state variable of one node: who, when (Unix s) and why."""

    node: str
    field: str
    """``provisioning_state`` or ``fleet_stage``."""
    from_state: str
    to_state: str
    actor: str
    reason: str
    at_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "field": self.field,
            "from": self.from_state,
            "to": self.to_state,
            "actor": self.actor,
            "reason": self.reason,
            "at_s": self.at_s,
        }


class TransitionStore(Protocol):
    """Persists a node after a move together with its history record (atomically, where it can).

    A store may raise ``velyrix.errors.ConflictError`` when the node changed underneath
    (optimistic locking); ``transition`` then leaves the in-memory node as it was.
    """

    def save_transition(self, node: Any, record: TransitionRecord) -> None: ...


@dataclass
class MemoryStore:
    """An in-memory store for tests and the twin: keeps every record in ``history``."""

    history: list[TransitionRecord] = field(default_factory=list)

    def save_transition(self, node: Any, record: TransitionRecord) -> None:
        self.history.append(record)

    def for_node(self, name: str) -> list[TransitionRecord]:
        """The records of node ``name``, oldest first."""
        return [r for r in self.history if r.node == name]


class InvalidTransitionError(errors.ConflictError):
    """A move that the lifecycle table does not allow."""

    code = "invalid_transition"
    template = "node '{node}': cannot move {field} from '{from_state}' to '{to_state}'"


def field_of(to_state: str) -> str:
    """Which state variable ``to_state`` belongs to; unknown names raise ``UnknownNameError``."""
    if to_state in PROVISIONING_TABLE:
        return "provisioning_state"
    if to_state in STAGE_TABLE:
        return "fleet_stage"
    raise errors.UnknownNameError("node state", to_state, [*PROVISIONING_TABLE, *STAGE_TABLE])


def allowed(from_state: str, to_state: str) -> bool:
    """Whether the table allows ``from_state`` -> ``to_state`` (same variable; staying put is not a move)."""
    table = PROVISIONING_TABLE if field_of(to_state) == "provisioning_state" else STAGE_TABLE
    return to_state in table.get(from_state, frozenset())


def transition(
    node: NodeLike, to_state: str, *, actor: str, reason: str, store: TransitionStore, now_s: float | None = None
) -> TransitionRecord:
    """Move ``node`` to ``to_state`` (a provisioning state or a fleet stage).

    Validates against the table, sets the attribute, and saves node + record through ``store``.
    ``actor`` names who acts (``reconciler/cluster``, ``health``, ``user:alice``); ``reason`` says why;
    ``now_s`` (Unix seconds) defaults to the fleet's clock (``fleet.clock``: the wall clock, or the twin's).
    Returns the record. Raises
    ``InvalidTransitionError`` for a move the table forbids and ``UnknownNameError`` for an unknown state.
    On a store error the node's attribute is restored.
    """
    if not actor or not reason:
        raise errors.InvalidInputError("a transition needs an actor and a reason")
    attr = field_of(to_state)
    current: str = getattr(node, attr)
    if not allowed(current, to_state):
        raise InvalidTransitionError(node=node.name, field=attr, from_state=current, to_state=to_state)
    record = TransitionRecord(
        node=node.name,
        field=attr,
        from_state=current,
        to_state=to_state,
        actor=actor,
        reason=reason,
        at_s=clock.now_s() if now_s is None else now_s,
    )
    setattr(node, attr, to_state)
    try:
        store.save_transition(node, record)
    except BaseException:
        setattr(node, attr, current)
        raise
    return record


def allocatable(node: NodeLike) -> bool:
    """Whether ``node`` may be allocated to a tenant (available and in production)."""
    return node.provisioning_state == s.AVAILABLE and node.fleet_stage == s.PRODUCTION
