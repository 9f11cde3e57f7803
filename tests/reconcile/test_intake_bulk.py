"""Fleet intake at scale writes in bulk (issue 14: ``velyrix up`` start-up) and loses nothing: every node's
three intake moves are recorded in order with who and why, a refused node's failure is recorded too, and the
twin agents' tokens issued in one statement each work, one per node, the earlier ones revoked."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.reconcile.test_intake_isolation import _register_unknown
from tests.reconcile.world import World
from velyrix import errors
from velyrix.controlplane import node_health
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import enrollment
from velyrix.fleet import states


def _moves(world: World) -> dict[str, list[tuple[str | None, str, str, str]]]:
    t, n = models.NodeTransition, models.Node
    with world.sessionmaker() as s:
        rows = s.execute(
            sa.select(n.name, t.from_state, t.to_state, t.actor, t.reason)
            .join(n, n.id == t.node_id)
            .order_by(sa.literal_column("node_transitions.rowid"))  # SQLite: the order rows were written in
        ).all()
    out: dict[str, list[tuple[str | None, str, str, str]]] = {}
    for name, *rest in rows:
        out.setdefault(name, []).append(tuple(rest))  # type: ignore[arg-type]
    return out


def test_every_enrolled_node_has_its_three_intake_moves_in_order(world: World) -> None:
    moves = _moves(world)
    assert set(moves) == set(world.sim.nodes) and len(moves) == 96
    for name, recorded in moves.items():
        assert [(f, to) for f, to, _, _ in recorded] == [
            (states.ENROLLED, states.INSPECTING),
            (states.INSPECTING, states.AVAILABLE),
            (states.BURN_IN, states.PRODUCTION),
        ], name
        assert {actor for _, _, actor, _ in recorded} == {enrollment.ACTOR}
        assert [reason for *_, reason in recorded][-1] == "burn-in passed"


def test_a_refused_node_s_failure_is_recorded_beside_the_others(world: World) -> None:
    _register_unknown(world, "ghost-003")
    assert world.runtime.reconciler.intake() == 0
    recorded = _moves(world)["ghost-003"]
    assert [to for _, to, _, _ in recorded] == [states.INSPECTING, states.FAILED]
    assert "ghost-003" in recorded[-1][3]


def test_tokens_issued_in_bulk_authenticate_their_node_and_revoke_the_earlier_ones(world: World) -> None:
    with world.sessionmaker() as s:
        nodes = list(s.scalars(sa.select(models.Node).order_by(models.Node.name)).all())
        first = node_health.issue_tokens(s, nodes, created_by="test")
        second = node_health.issue_tokens(s, nodes[:10], created_by="test")
        s.commit()
        assert len(first) == 96 and len(set(first.values())) == 96
        for node in nodes[:10]:
            assert principals.authenticate_node(s, second[node.name]).name == f"node:{node.name}"
            with pytest.raises(errors.AuthenticationError):
                principals.authenticate_node(s, first[node.name])  # rotated: the earlier token stops working
        for node in nodes[10:]:
            assert principals.authenticate_node(s, first[node.name]).name == f"node:{node.name}"
        open_rows = s.scalar(
            sa.select(sa.func.count())
            .select_from(models.NodeCredential)
            .where(models.NodeCredential.revoked_at.is_(None))
        )
        assert open_rows == 96
