"""The node lifecycle: one table, one transition function that validates, records and saves."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from velyrix import errors
from velyrix.fleet import states, transitions


@dataclass
class Node:
    name: str = "n0"
    provisioning_state: str = states.ENROLLED
    fleet_stage: str = states.BURN_IN


def test_transition_records_actor_time_reason_and_saves() -> None:
    node, store = Node(), transitions.MemoryStore()
    rec = transitions.transition(
        node, states.INSPECTING, actor="reconciler/fleet", reason="enrolled", store=store, now_s=12.5
    )
    assert node.provisioning_state == states.INSPECTING
    assert store.for_node("n0") == [rec]
    assert rec.to_dict() == {
        "node": "n0",
        "field": "provisioning_state",
        "from": "enrolled",
        "to": "inspecting",
        "actor": "reconciler/fleet",
        "reason": "enrolled",
        "at_s": 12.5,
    }


def test_full_tenant_lifecycle_is_allowed() -> None:
    node, store = Node(provisioning_state=states.AVAILABLE, fleet_stage=states.PRODUCTION), transitions.MemoryStore()
    path = [
        states.ALLOCATED,
        states.PROVISIONING,
        states.ACTIVE,
        states.DEPROVISIONING,
        states.SANITIZING,
        states.AVAILABLE,
    ]
    for to in path:
        transitions.transition(node, to, actor="t", reason="lifecycle", store=store)
    assert [r.to_state for r in store.history] == path


def test_fleet_stage_moves_through_the_stage_table() -> None:
    node, store = Node(provisioning_state=states.AVAILABLE), transitions.MemoryStore()
    for to in (states.PRODUCTION, states.QUARANTINED, states.RMA, states.BURN_IN):
        transitions.transition(node, to, actor="health", reason="x", store=store)
    assert node.fleet_stage == states.BURN_IN
    assert {r.field for r in store.history} == {"fleet_stage"}


def test_forbidden_move_raises_and_leaves_node_unchanged() -> None:
    node, store = Node(provisioning_state=states.AVAILABLE), transitions.MemoryStore()
    with pytest.raises(transitions.InvalidTransitionError, match="from 'available' to 'active'"):
        transitions.transition(node, states.ACTIVE, actor="t", reason="skip", store=store)
    assert node.provisioning_state == states.AVAILABLE and not store.history


def test_retired_is_terminal() -> None:
    node = Node(fleet_stage=states.RETIRED)
    with pytest.raises(transitions.InvalidTransitionError):
        transitions.transition(node, states.PRODUCTION, actor="t", reason="r", store=transitions.MemoryStore())


def test_unknown_state_suggests_the_closest() -> None:
    with pytest.raises(errors.UnknownNameError) as info:
        transitions.transition(Node(), "inspectng", actor="t", reason="r", store=transitions.MemoryStore())
    assert info.value.suggestion == "inspecting"


def test_store_failure_restores_the_state() -> None:
    class Failing:
        def save_transition(self, node: object, record: object) -> None:
            raise errors.ConflictError("version changed")

    node = Node()
    with pytest.raises(errors.ConflictError):
        transitions.transition(node, states.INSPECTING, actor="t", reason="r", store=Failing())
    assert node.provisioning_state == states.ENROLLED


def test_actor_and_reason_are_required() -> None:
    with pytest.raises(errors.InvalidInputError):
        transitions.transition(Node(), states.INSPECTING, actor="", reason="r", store=transitions.MemoryStore())


def test_every_state_has_a_row_and_only_valid_targets() -> None:
    assert set(transitions.PROVISIONING_TABLE) == set(states.PROVISIONING_STATES)
    assert set(transitions.STAGE_TABLE) == set(states.FLEET_STAGES)
    for table, valid in (
        (transitions.PROVISIONING_TABLE, states.PROVISIONING_STATES),
        (transitions.STAGE_TABLE, states.FLEET_STAGES),
    ):
        for src, targets in table.items():
            assert targets <= set(valid) and src not in targets


def test_allocatable_needs_available_and_production() -> None:
    assert transitions.allocatable(Node(provisioning_state=states.AVAILABLE, fleet_stage=states.PRODUCTION))
    assert not transitions.allocatable(Node(provisioning_state=states.AVAILABLE, fleet_stage=states.BURN_IN))
