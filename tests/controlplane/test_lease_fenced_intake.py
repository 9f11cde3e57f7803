"""The fleet intake (nodes the driver reports, inspected and burned in: ``enrollment.reconcile_fleet``) runs
under the reconcile leases like a cluster's step: on PostgreSQL only the replica holding the shard of
``leases.intake_key(region)`` runs the pass, and the pass commits only under the fence, so a replica that does
not hold the intake (or whose lease moved while its pass was reading the driver) writes no node's state.

PostgreSQL: real leases on a fresh database per test, a second replica taking the lease over in the middle of
the first one's pass (a driver seam that lets the takeover happen between the pass's read and its commit).
SQLite: one process and no leases: the intake runs unfenced, as before."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane import db
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import enrollment, leases
from velyrix.controlplane.reconcile.runner import Reconciler
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.fleet import states
from velyrix.fleet.drivers import base

REGION = "us-east-1"
_names = itertools.count()


class _Seam:
    """The twin's driver with a hook run once, at the pass's first inspection (after the pass read its nodes,
    before it commits), and a count of the calls that reached the twin."""

    def __init__(self, driver: base.Driver, hook: Callable[[], None] | None = None) -> None:
        self.driver = driver
        self.hook = hook
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.driver, name)

    def inspect(self, node: str, *, request_id: str) -> base.Operation:
        self.calls += 1
        if self.hook is not None:
            hook, self.hook = self.hook, None
            hook()
        return self.driver.inspect(node, request_id=request_id)

    def run_acceptance(self, node: str, *, request_id: str, tests: Any = ()) -> base.Operation:
        self.calls += 1
        return self.driver.run_acceptance(node, request_id=request_id, tests=tests)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fleet(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, orm.sessionmaker[orm.Session], FleetRuntime]]:
    """(url, sessionmaker, runtime): a fresh database with 4 twin nodes enrolled and not yet taken in."""
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'intake.db'}"
    else:
        url = request.getfixturevalue("pg_server").create_database(f"intake{next(_names)}")
    engine = db.make_engine(url)
    db.upgrade(url=url, engine=engine)
    sm = orm.sessionmaker(engine, expire_on_commit=False)
    runtime = FleetRuntime.twin(sm, REGION, node_counts={"hgx-h200-8g": 4}, seed=5, delays=False)
    assert runtime.sim is not None
    with sm() as s:
        enrollment.enroll(s, runtime.driver, REGION, {h: n.node_type for h, n in runtime.sim.nodes.items()})
        s.commit()
    yield url, sm, runtime
    engine.dispose()


def _states(sm: orm.sessionmaker[orm.Session]) -> dict[str, tuple[str, str]]:
    with sm() as s:
        return {n.name: (n.provisioning_state, n.fleet_stage) for n in s.scalars(sa.select(models.Node))}


def _moves(sm: orm.sessionmaker[orm.Session]) -> list[tuple[str, str, str]]:
    """(node id, field, to state) of every recorded node transition."""
    with sm() as s:
        rows = s.execute(
            sa.select(models.NodeTransition.node_id, models.NodeTransition.field, models.NodeTransition.to_state)
        )
        return [tuple(r) for r in rows.all()]


def _replica(sm: orm.sessionmaker[orm.Session], driver: Any, name: str, lease_s: float = 30.0) -> Reconciler:
    """A reconciler with its own leases (one shard: whoever holds it holds the intake)."""
    r = Reconciler(sm, driver, REGION)
    r.leases = leases.Leases(sm, REGION, replica=name, shards=1, lease_s=lease_s)
    return r


def _postgres(url: str) -> None:
    if not url.startswith("postgresql"):
        pytest.skip("leases are PostgreSQL's (one SQLite process takes its fleet in alone, tested below)")


def _taken_in(sm: orm.sessionmaker[orm.Session]) -> bool:
    return all(v == (states.AVAILABLE, states.PRODUCTION) for v in _states(sm).values())


def test_a_replica_whose_lease_moved_mid_pass_writes_no_node_state(
    fleet: tuple[str, orm.sessionmaker[orm.Session], FleetRuntime],
) -> None:
    url, sm, runtime = fleet
    _postgres(url)
    new = _replica(sm, runtime.driver, "new")
    assert new.leases is not None

    def takeover() -> None:  # "old" paused past its lease: it expires on the database's clock, "new" takes it
        with sm() as s:
            s.execute(sa.text("UPDATE reconcile_leases SET expires_at = clock_timestamp() WHERE holder = 'old'"))
            s.commit()
        new.leases.refresh(force=True)  # type: ignore[union-attr]
        assert set(new.leases.held) == {0}  # type: ignore[union-attr]

    seam = _Seam(runtime.driver, takeover)
    old = _replica(sm, seam, "old")
    assert old.leases is not None
    old.leases.refresh(force=True)
    assert old.leases.owns(leases.intake_key(REGION))
    before = _states(sm)
    assert set(before.values()) == {(states.ENROLLED, states.BURN_IN)}
    old.intake()  # reads its nodes, asks the driver; its lease moves before it commits
    assert seam.calls >= 1  # the pass did run as far as the driver
    assert _states(sm) == before and _moves(sm) == []  # ... and committed nothing: the fence refused it
    while new.intake():
        pass
    assert _taken_in(sm)
    moves = _moves(sm)
    assert len(moves) == len(set(moves)) == 3 * len(before)  # inspecting, available, production: each once
    assert old.intake() == 0 and _moves(sm) == moves  # "old" does not hold the intake any more
    new.leases.close()
    old.leases.close()


def test_only_the_replica_holding_the_intake_runs_it(
    fleet: tuple[str, orm.sessionmaker[orm.Session], FleetRuntime],
) -> None:
    url, sm, runtime = fleet
    _postgres(url)
    holder = _replica(sm, _Seam(runtime.driver), "holder")
    assert holder.leases is not None
    holder.leases.refresh(force=True)
    other_seam = _Seam(runtime.driver)
    other = _replica(sm, other_seam, "other")
    assert other.leases is not None
    other.leases.refresh(force=True)
    assert other.leases.held == {} and not other.leases.owns(leases.intake_key(REGION))
    before = _states(sm)
    assert other.intake() == 0
    assert other_seam.calls == 0 and _states(sm) == before and _moves(sm) == []
    while holder.intake():
        pass
    assert _taken_in(sm)
    holder.leases.close()
    other.leases.close()


def test_one_process_without_leases_takes_its_fleet_in(
    fleet: tuple[str, orm.sessionmaker[orm.Session], FleetRuntime],
) -> None:
    _url, sm, runtime = fleet
    alone = Reconciler(sm, runtime.driver, REGION)
    while alone.intake():
        pass
    assert _taken_in(sm)
