"""Reconcile leases on a real PostgreSQL: shards are shared fairly between replicas, a replica that stops
renewing loses its shards to the others after the lease period, and a replica whose lease moved cannot
commit (the fence rolls its transaction back, so its write is not in the database)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane import db
from velyrix.controlplane.reconcile import leases
from velyrix.testing import postgres

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def sm() -> Iterator[orm.sessionmaker[orm.Session]]:
    if postgres.find_bin_dir() is None:
        pytest.skip("PostgreSQL server binaries not installed (scripts/apt-packages.txt lists them)")
    with postgres.PostgresServer.start() as pg:
        url = pg.create_database("leases")
        engine = db.make_engine(url)
        db.upgrade(url=url, engine=engine)
        yield orm.sessionmaker(engine, expire_on_commit=False)
        engine.dispose()


def _cluster_in(shard: int, shards: int) -> str:
    return next(f"cls_{i}" for i in range(10_000) if leases.shard_of(f"cls_{i}", shards) == shard)


def _holders(sm: orm.sessionmaker[orm.Session], region: str) -> dict[int, str | None]:
    with sm() as s:
        rows = s.execute(sa.text("SELECT shard, holder FROM reconcile_leases WHERE region = :r"), {"r": region})
        return dict(rows.all())


def test_three_replicas_share_the_shards_and_a_silent_one_loses_them(sm: orm.sessionmaker[orm.Session]) -> None:
    a, b, c = (leases.Leases(sm, "r-share", replica=n, shards=12, lease_s=1.0) for n in "abc")
    a.refresh(force=True)
    assert len(a.held) == 12  # alone, it takes every shard
    for _ in range(3):  # b and c join; a gives back what is above its share, the newcomers take it
        for r in (b, c, a):
            r.refresh(force=True)
    assert sorted(len(r.held) for r in (a, b, c)) == [4, 4, 4]
    assert set(a.held).isdisjoint(b.held) and set(b.held).isdisjoint(c.held) and set(a.held).isdisjoint(c.held)
    lost = set(c.held)
    time.sleep(1.2)  # c stops renewing (as if SIGKILLed); its shards expire on the database's clock
    for _ in range(2):
        a.refresh(force=True)
        b.refresh(force=True)
    assert set(a.held) | set(b.held) == set(range(12)) and lost <= set(a.held) | set(b.held)
    holders = _holders(sm, "r-share")
    assert {holders[s] for s in lost} <= {"a", "b"}


def test_a_replica_whose_lease_moved_does_not_commit(sm: orm.sessionmaker[orm.Session]) -> None:
    old = leases.Leases(sm, "r-fence", replica="old", shards=1, lease_s=0.5)
    old.refresh(force=True)
    cluster = _cluster_in(0, 1)
    assert old.owns(cluster)
    with sm() as s:  # the fence passes while the lease is held: the write commits
        s.execute(sa.text("CREATE TABLE IF NOT EXISTS fenced_writes (who text)"))
        s.execute(sa.text("INSERT INTO fenced_writes VALUES ('old, in time')"))
        old.fence(s, cluster)
        s.commit()
    time.sleep(0.6)
    new = leases.Leases(sm, "r-fence", replica="new", shards=1, lease_s=30.0)
    new.refresh(force=True)
    assert new.owns(cluster) and _holders(sm, "r-fence") == {0: "new"}
    old.held[0].until_mono = time.monotonic() + 60  # even a replica whose own clock says it still holds it
    with sm() as s:
        s.execute(sa.text("INSERT INTO fenced_writes VALUES ('old, too late')"))
        with pytest.raises(leases.LeaseLost):
            old.fence(s, cluster)
        s.rollback()
    assert not old.owns(cluster)
    with sm() as s:
        assert list(s.scalars(sa.text("SELECT who FROM fenced_writes"))) == ["old, in time"]


def test_a_takeover_waits_for_the_fenced_commit(sm: orm.sessionmaker[orm.Session]) -> None:
    """The fence locks the lease row until COMMIT: a replica taking the shard over meanwhile skips it, so the
    commit that passed the fence and the new holder's epoch never overlap."""
    holder = leases.Leases(sm, "r-race", replica="holder", shards=1, lease_s=0.5)
    holder.refresh(force=True)
    cluster = _cluster_in(0, 1)
    with sm() as s:
        holder.fence(s, cluster)  # row locked FOR SHARE until this transaction ends
        time.sleep(0.6)  # the lease expires while the transaction is still open
        taker = leases.Leases(sm, "r-race", replica="taker", shards=1, lease_s=30.0)
        taker.refresh(force=True)
        assert taker.held == {}  # the locked row was skipped
        s.commit()
    taker.refresh(force=True)
    assert set(taker.held) == {0} and taker.held[0].epoch == holder.held[0].epoch + 1
