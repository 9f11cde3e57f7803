"""The tamper-evident audit log: append cost, and proof size and time at 10 million events.

1. Append: one audit event per transaction (``audit.record`` + commit, as an API mutation does), with the
   Merkle update (leaf, completed inner nodes, head bump: ``controlplane/audit/log.py``) against the same
   inserts with the Merkle listeners removed, alternating rounds on the same migrated database; SQLite
   (WAL, the embedded default) and PostgreSQL when its binaries are installed. Figure: the median of the
   per-round throughput ratios (target >= 0.5).
2. Proofs at 10,000,000 leaves: a synthetic tree in memory (leaf ``i`` is ``SHA-256(0x00 || i)``; every
   perfect subtree of 16 or more leaves stored, smaller ones recomputed from the leaves), so the same
   code as the log (``merkle.inclusion_ranges``, ``consistency_ranges``, ``subtree_hash``) builds and
   verifies proofs of random leaves. Storing 10 million rows in a database here would take minutes and
   gigabytes; instead (3) measures the database-backed proof on 1,000,000 leaves stored in SQLite.
3. Proofs from SQLite with 1,000,000 leaves and their inner nodes (``log.hashes``: one query a proof).
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from velyrix.controlplane.audit import merkle

ROUNDS = 5
EVENTS_PER_ROUND = 300
SYNTHETIC_LEAVES = 10_000_000
STORED_FROM_LEVEL = 4
DB_LEAVES = 1_000_000
PROOFS = 1000


def _append_rate(sessionmaker: Any, merkle_on: bool) -> float:
    from velyrix.controlplane import audit
    from velyrix.controlplane.audit import log

    if merkle_on:
        log.install()
    else:
        for name, fn in (("before_flush", log._collect), ("before_commit", log._sequence)):
            sa.event.remove(sa.orm.Session, name, fn)
    info = audit.RequestInfo(request_id="req_bench", source_address="127.0.0.1", method="POST", path="/v1/clusters")
    start = time.perf_counter()
    for i in range(EVENTS_PER_ROUND):
        with sessionmaker() as s:
            audit.record(s, info, None, action="clusters.create", target=f"clusters/{i}", detail={"n": i})
            s.commit()
    rate = EVENTS_PER_ROUND / (time.perf_counter() - start)
    log.install()
    return rate


def _append(url: str, label: str) -> None:
    from sqlalchemy import orm

    from velyrix.controlplane.db import engine, migrate

    eng = engine.make_engine(url)
    migrate.upgrade(url, engine=eng)
    sessionmaker = orm.sessionmaker(eng, expire_on_commit=False)
    _append_rate(sessionmaker, True)  # warm-up
    ratios, plain, with_log = [], [], []
    for _ in range(ROUNDS):
        p = _append_rate(sessionmaker, False)
        m = _append_rate(sessionmaker, True)
        plain.append(p)
        with_log.append(m)
        ratios.append(m / p)
    eng.dispose()
    print(
        f"{label}: plain insert {statistics.median(plain):.0f} events/s, with Merkle update "
        f"{statistics.median(with_log):.0f} events/s; ratio (median of {ROUNDS} rounds) "
        f"{statistics.median(ratios):.2f}x (target >= 0.5)"
    )


def _leaf(i: int) -> bytes:
    return merkle.leaf_hash(i.to_bytes(8, "big"))


class SyntheticTree:
    """``n`` leaves; perfect subtrees of ``2**STORED_FROM_LEVEL`` leaves or more kept in byte arrays."""

    def __init__(self, n: int) -> None:
        self.n = n
        chunk = 1 << STORED_FROM_LEVEL
        base = bytearray()
        for b in range(n // chunk):
            base += merkle.root_of([_leaf(i) for i in range(b * chunk, (b + 1) * chunk)])
        self.levels = {STORED_FROM_LEVEL: bytes(base)}
        level, cur = STORED_FROM_LEVEL, base
        while len(cur) >= 64:
            nxt = bytearray()
            for j in range(0, len(cur) - 32, 64):
                nxt += merkle.node_hash(cur[j : j + 32], cur[j + 32 : j + 64])
            level, cur = level + 1, nxt
            self.levels[level] = bytes(cur)

    def node(self, key: merkle.NodeKey) -> bytes:
        level, idx = key
        if level >= STORED_FROM_LEVEL:
            return self.levels[level][idx * 32 : idx * 32 + 32]
        width = 1 << level
        return merkle.root_of([_leaf(i) for i in range(idx * width, (idx + 1) * width)])


def _time_proofs(make: Callable[[int], tuple[int, bool]], samples: list[int]) -> tuple[float, float]:
    """(median proof size in hashes, median seconds per proof incl. verification)."""
    sizes, times = [], []
    for s in samples:
        start = time.perf_counter()
        count, ok = make(s)
        times.append(time.perf_counter() - start)
        assert ok, "a proof did not verify"
        sizes.append(count)
    return statistics.median(sizes), statistics.median(times)


def _synthetic() -> None:
    n = SYNTHETIC_LEAVES
    start = time.perf_counter()
    tree = SyntheticTree(n)
    root = merkle.subtree_hash(0, n, tree.node)
    print(f"synthetic tree of {n:,} leaves built in {time.perf_counter() - start:.1f} s")
    rng = random.Random(17)

    def inclusion(i: int) -> tuple[int, bool]:
        path = [merkle.subtree_hash(s, e, tree.node) for s, e in merkle.inclusion_ranges(i, n)]
        return len(path), merkle.verify_inclusion(i, n, _leaf(i), path, root)

    def consistency(m: int) -> tuple[int, bool]:
        proof = [merkle.subtree_hash(s, e, tree.node) for s, e in merkle.consistency_ranges(m, n)]
        return len(proof), merkle.verify_consistency(m, n, merkle.subtree_hash(0, m, tree.node), root, proof)

    for name, fn in (("inclusion", inclusion), ("consistency", consistency)):
        count, seconds = _time_proofs(fn, [rng.randrange(1, n) for _ in range(PROOFS)])
        print(
            f"{name} proof at {n:,} leaves: {count:.0f} hashes ({count * 32:.0f} bytes, median), "
            f"{seconds * 1e6:.0f} us to build and verify (median of {PROOFS}, in memory)"
        )


def _database_proofs(home: Path) -> None:
    import sqlite3

    from velyrix.controlplane.audit import log
    from velyrix.controlplane.db import engine, migrate

    url = f"sqlite:///{home / 'proofs.db'}"
    eng = engine.make_engine(url)
    migrate.upgrade(url, engine=eng)
    eng.dispose()
    leaves = log.tree_rows([i.to_bytes(8, "big") for i in range(DB_LEAVES)], [f"e{i}" for i in range(DB_LEAVES)])
    with sqlite3.connect(home / "proofs.db") as conn:
        conn.executemany("INSERT INTO audit_leaves VALUES (:idx, :event_id, :leaf_hash, :parents)", leaves)
        conn.execute("UPDATE audit_log_head SET tree_size = ?", (DB_LEAVES,))
    eng = engine.make_engine(url)
    rng = random.Random(5)
    with eng.connect() as conn:
        root = log.root(conn, DB_LEAVES)

        def inclusion(i: int) -> tuple[int, bool]:
            path = log.hashes(conn, merkle.inclusion_ranges(i, DB_LEAVES))
            return len(path), merkle.verify_inclusion(i, DB_LEAVES, leaves[i]["leaf_hash"], path, root)

        count, seconds = _time_proofs(inclusion, [rng.randrange(DB_LEAVES) for _ in range(PROOFS)])
    eng.dispose()
    print(
        f"inclusion proof from SQLite at {DB_LEAVES:,} leaves: {count:.0f} hashes, {seconds * 1e3:.2f} ms "
        f"(median of {PROOFS}; one query)"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        _append(f"sqlite:///{home / 'append.db'}", "SQLite")
        from velyrix.testing import postgres

        if postgres.find_bin_dir() is not None:
            server = postgres.PostgresServer.start()
            try:
                _append(server.create_database("bench_audit"), "PostgreSQL")
            finally:
                server.stop()
        _database_proofs(home)
    _synthetic()


if __name__ == "__main__":
    main()
