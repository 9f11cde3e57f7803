"""Reconcile leases: the clusters of a region sharded between control-plane replicas on one PostgreSQL.

A region's clusters fall into ``shards`` shards (``shard_of``: a hash of the cluster id). Each shard is a row
of ``reconcile_leases`` (``velyrix.controlplane.db.models.leases``) held by one replica until ``expires_at``,
on the database's clock (``clock_timestamp()``, so replicas' clocks never matter). ``Leases.refresh``, called
by the reconcile loop before each pass, in one transaction:

1. beats this replica's heart (``reconcile_replicas``) and counts the live replicas;
2. renews the shards it holds (a shard taken over meanwhile is dropped: its epoch changed);
3. takes free or expired shards (``FOR UPDATE SKIP LOCKED``, the epoch grows by one) up to its fair share,
   ``ceil(shards / live replicas)``, or gives back the ones above it (a replica that joins gets its share).

A replica SIGKILLed stops renewing: its shards expire within ``lease_s`` and the others take them on their next
pass. **Fencing**: ``fence`` runs inside each reconcile transaction just before COMMIT; it checks that the
shard's row still names this replica with the epoch it took, unexpired, and locks the row ``FOR SHARE``
until the commit, so a takeover (an UPDATE of that row) waits for the commit and a replica whose lease moved
never commits (``LeaseLost``: the transaction is rolled back). Besides the lease, each step still runs under
the cluster's transaction-scoped advisory lock (``locks.try_claim``), so even a replica that lost its lease
mid-step cannot overlap the new holder's step. Transaction-scoped locks and row locks work through pgbouncer
in transaction pooling mode (docs/production.md); session-level advisory locks would not.

The fleet intake of a region (``enrollment.reconcile_fleet``: nodes the driver reports, inspected and burned in)
is leased the same way, as the key ``intake_key(region)`` in place of a cluster id: only the holder of its
shard runs the pass, and the pass commits only under the fence. A process that reconciles nothing (``velyrix
server`` without ``--fleet-driver`` on PostgreSQL) holds no shard: its fence is ``NO_LEASE``, which refuses
every write made on a cluster's behalf (a heal from a node report) and leaves it to the holder's reconciler.
"""

from __future__ import annotations

import hashlib
import math
import os
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy import orm

DEFAULT_SHARDS = 32
"""Shards per region: enough for a few dozen replicas to share evenly, few enough to renew in one statement."""
DEFAULT_LEASE_S = 15.0
"""Seconds a shard stays held without renewal: the most a dead replica's clusters wait for a new holder."""
SAFETY = 0.8
"""Share of ``lease_s`` after the last renewal during which this replica acts on a shard (its own clock may
run slow against the database's)."""


class LeaseLost(Exception):
    """This replica no longer holds the shard of the cluster it was about to commit: roll back."""


class Fence(Protocol):
    """What a write on a cluster's behalf is fenced by: ``Leases`` (a replica) or ``NO_LEASE`` (no reconciler)."""

    def fence(self, session: orm.Session, cluster_id: str) -> None:
        """Raise ``LeaseLost`` unless this process may commit ``session``'s writes for ``cluster_id``."""


class _NoLease:
    """The fence of a process that holds no reconcile lease (no fleet driver, PostgreSQL): it is never the
    holder, so every fenced write of it is refused; the holder's reconciler makes it on its next pass."""

    def fence(self, session: orm.Session, cluster_id: str) -> None:
        raise LeaseLost(f"this process reconciles nothing (no fleet driver): {cluster_id} is left to its holder")


NO_LEASE: Fence = _NoLease()
"""The fence of ``velyrix server`` without ``--fleet-driver`` on PostgreSQL (``ops.remediation.node_reports``)."""


def intake_key(region: str) -> str:
    """The key whose shard's holder runs the fleet intake of ``region`` (``Reconciler.intake``)."""
    return f"intake/{region}"


@dataclass
class _Held:
    epoch: int
    until_mono: float
    """``time.monotonic()`` after which this replica stops acting on the shard until it renews."""


def replica_id() -> str:
    """A name for this process among the replicas: ``host:pid:random`` (unique across restarts)."""
    return f"{socket.gethostname()[:64]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def shard_of(cluster_id: str, shards: int) -> int:
    """The shard (0 to ``shards - 1``) of ``cluster_id``, the same in every process and version."""
    return int.from_bytes(hashlib.sha256(cluster_id.encode()).digest()[:4], "big") % shards


class Leases:
    """The shards of ``region`` this replica holds (PostgreSQL only: one SQLite process needs no leases)."""

    def __init__(
        self,
        sessionmaker: orm.sessionmaker[orm.Session],
        region: str,
        *,
        replica: str | None = None,
        shards: int = DEFAULT_SHARDS,
        lease_s: float = DEFAULT_LEASE_S,
    ) -> None:
        if shards < 1 or lease_s <= 0:
            raise ValueError("shards >= 1 and lease_s > 0")
        self.sessionmaker = sessionmaker
        self.region = region
        self.replica = replica or replica_id()
        self.shards = shards
        self.lease_s = lease_s
        self.held: dict[int, _Held] = {}
        self._next_refresh = 0.0

    def owns(self, cluster_id: str) -> bool:
        """Whether this replica may act on ``cluster_id`` (or ``intake_key(region)``) now (its shard held and
        renewed recently enough)."""
        held = self.held.get(shard_of(cluster_id, self.shards))
        return held is not None and time.monotonic() < held.until_mono

    def refresh(self, force: bool = False) -> None:
        """Heartbeat, renew, take or give back shards (see the module doc); at most every ``lease_s / 4``."""
        started = time.monotonic()
        if not force and started < self._next_refresh:
            return
        with self.sessionmaker() as s:
            live = self._beat(s)
            renewed = self._renew(s)
            share = math.ceil(self.shards / max(live, 1))
            if len(renewed) > share:
                self._give_back(s, sorted(renewed)[share:], renewed)
            elif len(renewed) < share:
                renewed.update(self._take(s, share - len(renewed)))
            s.commit()
        until = started + self.lease_s * SAFETY
        self.held = {shard: _Held(epoch, until) for shard, epoch in renewed.items()}
        self._next_refresh = started + self.lease_s / 4

    def fence(self, session: orm.Session, cluster_id: str) -> None:
        """In the reconcile transaction of ``cluster_id``, just before COMMIT: raise ``LeaseLost`` unless this
        replica still holds the shard at the epoch it took; else lock the lease row until the commit."""
        shard = shard_of(cluster_id, self.shards)
        held = self.held.get(shard)
        if held is None or time.monotonic() >= held.until_mono:
            raise LeaseLost(f"shard {shard} of {self.region} is not held by {self.replica}")
        row = session.execute(
            sa.text(
                "SELECT epoch FROM reconcile_leases WHERE region = :r AND shard = :k AND holder = :me "
                "AND epoch = :e AND expires_at > clock_timestamp() FOR SHARE"
            ),
            {"r": self.region, "k": shard, "me": self.replica, "e": held.epoch},
        ).first()
        if row is None:
            self.held.pop(shard, None)
            raise LeaseLost(f"shard {shard} of {self.region} moved from {self.replica} (epoch {held.epoch})")

    def close(self) -> None:
        """Give every shard back and leave (a clean stop: the others take the shards at once)."""
        with self.sessionmaker() as s:
            s.execute(
                sa.text(
                    "UPDATE reconcile_leases SET holder = NULL, expires_at = clock_timestamp() "
                    "WHERE region = :r AND holder = :me"
                ),
                {"r": self.region, "me": self.replica},
            )
            s.execute(sa.text("DELETE FROM reconcile_replicas WHERE replica = :me"), {"me": self.replica})
            s.commit()
        self.held = {}

    # --- the steps of ``refresh`` ----------------------------------------------------------------

    def _beat(self, s: orm.Session) -> int:
        """Seed the region's shard rows, record this replica's heartbeat; returns live replicas."""
        s.execute(
            sa.text(
                "INSERT INTO reconcile_leases (region, shard, holder, epoch, expires_at) "
                "SELECT :r, g, NULL, 0, clock_timestamp() FROM generate_series(0, :n - 1) AS g "
                "ON CONFLICT DO NOTHING"
            ),
            {"r": self.region, "n": self.shards},
        )
        s.execute(
            sa.text(
                "INSERT INTO reconcile_replicas (replica, region, started_at, expires_at) "
                "VALUES (:me, :r, clock_timestamp(), clock_timestamp() + make_interval(secs => :lease)) "
                "ON CONFLICT (replica) DO UPDATE SET expires_at = EXCLUDED.expires_at"
            ),
            {"me": self.replica, "r": self.region, "lease": self.lease_s},
        )
        s.execute(  # heartbeats long gone (replicas killed days ago) are not kept
            sa.text(
                "DELETE FROM reconcile_replicas WHERE region = :r "
                "AND expires_at < clock_timestamp() - make_interval(secs => :old)"
            ),
            {"r": self.region, "old": self.lease_s * 20},
        )
        live = s.scalar(
            sa.text("SELECT count(*) FROM reconcile_replicas WHERE region = :r AND expires_at > clock_timestamp()"),
            {"r": self.region},
        )
        return int(live or 1)

    def _renew(self, s: orm.Session) -> dict[int, int]:
        """Extend the shards still held at the epoch this replica took them; returns ``{shard: epoch}``."""
        if not self.held:
            return {}
        rows = s.execute(
            sa.text(
                "UPDATE reconcile_leases SET expires_at = clock_timestamp() + make_interval(secs => :lease) "
                "WHERE region = :r AND holder = :me AND shard = ANY(:shards) RETURNING shard, epoch"
            ),
            {"r": self.region, "me": self.replica, "lease": self.lease_s, "shards": list(self.held)},
        ).all()
        return {shard: epoch for shard, epoch in rows if self.held[shard].epoch == epoch}

    def _give_back(self, s: orm.Session, extra: list[int], renewed: dict[int, int]) -> None:
        s.execute(
            sa.text(
                "UPDATE reconcile_leases SET holder = NULL, expires_at = clock_timestamp() "
                "WHERE region = :r AND holder = :me AND shard = ANY(:shards)"
            ),
            {"r": self.region, "me": self.replica, "shards": extra},
        )
        for shard in extra:
            renewed.pop(shard)

    def _take(self, s: orm.Session, want: int) -> dict[int, int]:
        """Take up to ``want`` free or expired shards (the epoch grows: the old holder's commits now fail)."""
        rows = s.execute(
            sa.text(
                "UPDATE reconcile_leases SET holder = :me, epoch = epoch + 1, "
                "expires_at = clock_timestamp() + make_interval(secs => :lease) "
                "WHERE region = :r AND shard IN (SELECT shard FROM reconcile_leases WHERE region = :r "
                "AND (holder IS NULL OR expires_at <= clock_timestamp()) ORDER BY shard LIMIT :n "
                "FOR UPDATE SKIP LOCKED) RETURNING shard, epoch"
            ),
            {"r": self.region, "me": self.replica, "lease": self.lease_s, "n": want},
        ).all()
        return {shard: epoch for shard, epoch in rows}
