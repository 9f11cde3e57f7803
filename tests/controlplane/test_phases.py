"""Cluster phases move only along the table of ``reconcile.phases.MOVES``; ``status.set_phase`` records who,
when and why, and a forbidden move raises and changes nothing."""

from __future__ import annotations

import copy

import pytest

from velyrix import errors
from velyrix.controlplane import status
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import phases


def _cluster(phase: str) -> models.Cluster:
    c = models.Cluster(name="pretrain", phase=phases.INITIAL, conditions=[], phase_history=[], events=[])
    status.set_phase(c, phases.INITIAL, actor="test", reason="declared")
    c.phase = phase  # the phase a cluster reached earlier (the test starts from there)
    return c


def test_the_table_names_every_phase_and_only_phases() -> None:
    assert set(phases.MOVES) == set(phases.PHASES)
    for targets in phases.MOVES.values():
        assert targets <= set(phases.PHASES)
    assert phases.MOVES[phases.DELETED] == frozenset()
    assert all(phases.DELETING in phases.MOVES[p] for p in phases.PHASES if p not in (phases.DELETING, phases.DELETED))


def test_a_forbidden_move_raises_and_changes_nothing() -> None:
    c = _cluster(phases.READY)
    before = (c.phase, copy.deepcopy(c.phase_history), copy.deepcopy(c.events))
    with pytest.raises(status.InvalidPhaseMoveError) as info:
        status.set_phase(c, phases.PENDING, actor="tester", reason="go back")
    assert info.value.code == "invalid_phase_move" and info.value.http_status == 409
    assert "from phase Ready to Pending" in info.value.message and "Provisioning" in (info.value.hint or "")
    assert (c.phase, c.phase_history, c.events) == before
    deleted = _cluster(phases.DELETED)
    with pytest.raises(status.InvalidPhaseMoveError):
        status.set_phase(deleted, phases.DELETING, actor="tester", reason="again")
    assert deleted.phase == phases.DELETED


def test_each_allowed_move_is_recorded_with_who_when_why_and_where_from() -> None:
    for source, targets in phases.MOVES.items():
        for target in targets:
            c = _cluster(source)
            status.set_phase(c, target, actor="reconciler/cluster@host:1", reason=f"{source} done")
            last = c.phase_history[-1]
            assert c.phase == target
            assert (last["phase"], last["from"], last["actor"], last["reason"]) == (
                target,
                source,
                "reconciler/cluster@host:1",
                f"{source} done",
            )
            assert last["at"] and c.events[-1]["reason"] == f"Phase{target}"


def test_the_way_to_delivery_is_allowed_step_by_step_and_unknown_names_are_refused() -> None:
    c = _cluster(phases.PENDING)
    for nxt in phases.ORDER[1:]:
        status.set_phase(c, nxt, actor="test", reason="next")
    assert [h["phase"] for h in c.phase_history] == list(phases.ORDER)
    with pytest.raises(errors.UnknownNameError):
        status.set_phase(c, "Done", actor="test", reason="typo")


def test_the_cli_follows_the_order_of_the_table() -> None:
    from velyrix.cli import apply_follow as apply

    assert apply.PHASE_ORDER == phases.ORDER
    assert set(apply.SETTLED) == {phases.READY, phases.DEGRADED, phases.FAILED, phases.DELETED}
