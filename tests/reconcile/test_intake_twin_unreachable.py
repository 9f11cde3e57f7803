"""A driver that cannot answer (the served twin unreachable: ``TwinClient`` raises ``twin_unreachable``, 503) is
not a refusal of the node: the intake pass is rolled back and tried again on the next one, and the nodes it was
taking in stay in intake, instead of every waiting node being marked failed by whichever replica lost its link.

Real parts: the twin served over HTTP by ``TwinService``, a ``TwinClient`` to a port where nothing listens."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane import db
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import enrollment
from velyrix.controlplane.reconcile.runner import Reconciler
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.fleet import states
from velyrix.fleet.drivers.sim.remote import TwinClient, TwinService

REGION = "us-east-1"
TOKEN = "t" * 32
Sessions = orm.sessionmaker[orm.Session]


@pytest.fixture
def fleet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[orm.sessionmaker[orm.Session], TwinService]]:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    url = f"sqlite:///{tmp_path / 'v.db'}"
    engine = db.make_engine(url)
    db.upgrade(url=url, engine=engine)
    sm = orm.sessionmaker(engine, expire_on_commit=False)
    runtime = FleetRuntime.twin(sm, REGION, node_counts={"hgx-h200-8g": 3}, seed=7, delays=False)
    assert runtime.sim is not None
    with sm() as s:
        enrollment.enroll(s, runtime.driver, REGION, {h: n.node_type for h, n in runtime.sim.nodes.items()})
        s.commit()
    service = TwinService(runtime.driver, TOKEN)  # type: ignore[arg-type]
    yield sm, service
    service.close()
    engine.dispose()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _states(sm: orm.sessionmaker[orm.Session]) -> set[tuple[str, str]]:
    with sm() as s:
        return {(n.provisioning_state, n.fleet_stage) for n in s.scalars(sa.select(models.Node))}


def test_an_unreachable_twin_leaves_the_nodes_in_intake(
    fleet: tuple[orm.sessionmaker[orm.Session], TwinService],
) -> None:
    sm, service = fleet
    lost = TwinClient(f"http://127.0.0.1:{_free_port()}", TOKEN, "cut-off", timeout_s=2.0)
    try:
        cut_off = Reconciler(sm, lost, REGION)
        assert cut_off.intake() == 0 and cut_off.errors == 1  # logged and counted, tried again next pass
    finally:
        lost.close()
    assert _states(sm) == {(states.ENROLLED, states.BURN_IN)}  # not one node failed for a link that broke
    client = TwinClient(service.url, TOKEN, "linked")
    try:
        reconciler = Reconciler(sm, client, REGION)
        while reconciler.intake():
            pass
    finally:
        client.close()
    assert _states(sm) == {(states.AVAILABLE, states.PRODUCTION)}
