"""Two ``velyrix server`` replicas on one PostgreSQL each run the escalation sweeper (``ops.noc.sweeping``); a
due page is sent by one of them, once: a sweep runs under a claim of the database (a transaction-scoped
advisory lock), so a replica whose sweep starts while another's is still sending and committing skips it, and
its next sweep reads the counters the first one committed.

The interleaving is made deterministic: the second replica sweeps from inside the first one's pager, after the
first read the incident and before it commits."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from velyrix.controlplane.db.models import noc as models_noc
from velyrix.fleet import clock
from velyrix.ops.noc import incidents, sweeping
from velyrix.ops.service import create_app

pytestmark = pytest.mark.postgres
T0 = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)


class _Clock:
    """A fleet clock standing still at ``at`` (``velyrix.fleet.clock.Clock``)."""

    def __init__(self, at: dt.datetime) -> None:
        self.at = at

    def now_s(self) -> float:
        return self.at.timestamp()


def test_two_replicas_sweeping_at_once_send_a_due_page_once(pg_server: Any) -> None:
    url = pg_server.create_database("noc_sweep_replicas")
    first_app, second_app = create_app(url), create_app(url, migrate=False)
    sent: list[tuple[str, str]] = []
    with first_app.state.sessionmaker() as s:
        incidents.open_incident(
            s, key="k", priority="P1", title="down", tenant_id=None, cluster_id=None, source="test", at=T0
        )
        s.commit()
    second = sweeping.Sweeper(second_app, 30.0, lambda target, content: sent.append(("second", target)))
    second_sent: list[list[str]] = []

    def first_pager(target: str, content: dict[str, Any]) -> None:
        sent.append(("first", target))
        if not second_sent:  # the other replica's sweeper wakes up while this sweep is still open
            second_sent.append(second.once())

    first = sweeping.Sweeper(first_app, 30.0, first_pager)
    previous = clock.install(_Clock(T0 + dt.timedelta(minutes=1)))
    try:
        assert first.once() != []
        assert second_sent == [[]]  # the second replica's sweep found the sweep claimed: it sent nothing
        assert second.once() == []  # its next sweep sees the counters the first one committed
    finally:
        clock.install(previous)
    assert [t for who, t in sent] == ["email:noc-oncall@velyrix.example"], sent
    with first_app.state.sessionmaker() as s:
        assert s.query(models_noc.IncidentState).one().pages_sent == 1
    first_app.state.engine.dispose()
    second_app.state.engine.dispose()
