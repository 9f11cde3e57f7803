"""Three ``velyrix server --fleet-driver`` replicas on one PostgreSQL, one twin served by ``velyrix sim serve``,
30 clusters applied through the API; one replica SIGKILLed every 10 s (and started again, so three run).

Two runs in one process, each on a fresh database and twin: without kills (the baseline), then with them.
Figures: clusters Ready, wall seconds to all Ready and the ratio of the two runs, kills, takeovers (lease
epochs), the longest time a killed replica's shards stayed without a live holder (failover), and the checks:
double allocations (a node allocated twice, from ``node_transitions``), orphans (a node held for no cluster,
or one the twin provisioned for a cluster it does not belong to), duplicated driver requests (counted from
the twin's own ledger: a request id it executed twice, or one step of one node run under two request ids).

Knobs: ``VELYRIX_BENCH_REPLICA_CLUSTERS`` (30), ``VELYRIX_BENCH_REPLICA_KILL_S`` (10), ``..._LEASE_S`` (3).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

CLUSTERS = int(os.environ.get("VELYRIX_BENCH_REPLICA_CLUSTERS", "30"))
KILL_S = float(os.environ.get("VELYRIX_BENCH_REPLICA_KILL_S", "10"))
LEASE_S = float(os.environ.get("VELYRIX_BENCH_REPLICA_LEASE_S", "3"))
NODES_PER_CLUSTER = 2
REPLICAS = 3
SHARDS = 32
SPEED = 600.0  # simulated s per wall s: a 900 s provisioning takes 1.5 s, so kills land on requests in flight
HELD = ("allocated", "provisioning", "active")
STANDBY = """
import json, sys
from velyrix.cli import main
import uvicorn, velyrix.ops.service, velyrix.controlplane.reconcile.runtime  # noqa: F401  (warm imports)
import velyrix.fleet.drivers.sim.remote  # noqa: F401
args = json.loads(sys.stdin.readline())
sys.argv = ["velyrix", *args]
main.run()
"""
"""A replica process with its imports done, waiting for its arguments: a restart then costs the real start-up
(migrations, enrollment check, leases) but not Python's imports (tens of seconds on the loaded machine)."""


def _spec(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "region": "us-east-1",
        "node_type": "hgx-h200-8g",
        "node_count": NODES_PER_CLUSTER,
        "fabric": "infiniband-ndr",
        "scheduler": "slurm",
        "address": f"velyrix_cluster.{name}",
        "storage": {"parallel_fs_tb": 100.0},
        "acceptance": {t: True for t in ("gpu_burn_in", "nvlink", "ib_ports", "local_nvme", "all_reduce", "storage")},
    }


class World:
    """A database, a twin process and the replicas for one run."""

    def __init__(self, pg: Any, name: str, home: Path) -> None:
        from sqlalchemy import orm

        from velyrix.controlplane import db
        from velyrix.testing import postgres

        self.url = pg.create_database(name)
        self.engine = db.make_engine(self.url)
        db.upgrade(url=self.url, engine=self.engine)
        self.sm = orm.sessionmaker(self.engine, expire_on_commit=False)
        self.home = home
        self.kills: list[tuple[float, str]] = []
        self.token_file = home / "twin.token"
        self.twin_port = postgres.free_port()
        self.nodes = CLUSTERS * NODES_PER_CLUSTER + max(8, CLUSTERS // 3)  # room for the spares held back
        self.twin = self._spawn(
            None,
            ["sim", "serve", "--port", str(self.twin_port), "--nodes", f"hgx-h200-8g={self.nodes}"]
            + ["--seed", "5", "--speed", str(SPEED), "--token-file", str(self.token_file)],
        )
        self.replicas: dict[int, subprocess.Popen[bytes]] = {}  # API port -> process
        self.standby = self._spawn(self.url, [], standby=True)

    def _spawn(self, url: str | None, args: list[str], standby: bool = False) -> subprocess.Popen[bytes]:
        env = {**os.environ, "VELYRIX_HOME": str(self.home)}
        env.update({"VELYRIX_RECONCILE_POLL_S": "0.05", "VELYRIX_RECONCILE_IDLE_S": "0.5"})
        env.pop("VELYRIX_DATABASE_URL", None)
        if url:
            env["VELYRIX_DATABASE_URL"] = url
        cmd = [sys.executable, "-c", STANDBY] if standby else [sys.executable, "-m", "velyrix.cli.main", *args]
        stdin = subprocess.PIPE if standby else None
        with open(self.home / f"{'replica' if standby else args[0]}-{time.monotonic_ns()}.log", "wb") as log:
            return subprocess.Popen(cmd, env=env, stdin=stdin, stdout=log, stderr=subprocess.STDOUT)

    def start_replica(self, port: int) -> None:
        args = ["server", "--port", str(port), "--fleet-driver", f"http://127.0.0.1:{self.twin_port}"]
        args += ["--fleet-token-file", str(self.token_file), "--lease-s", str(LEASE_S)]
        args += ["--lease-shards", str(SHARDS)]
        proc, self.standby = self.standby, self._spawn(self.url, [], standby=True)
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(args).encode() + b"\n")
        proc.stdin.flush()
        self.replicas[port] = proc

    def ready(self) -> list[int]:
        """API ports of the replicas that answer ``/healthz`` (started, not killed)."""
        up = []
        for port, proc in self.replicas.items():
            try:
                if proc.poll() is None and httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    up.append(port)
            except httpx.HTTPError:
                pass
        return up

    def wait(self, what: str, check: Any, timeout_s: float = 180.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.twin.poll() is not None:
                raise RuntimeError("the twin exited")
            try:
                if check():
                    return
            except (httpx.HTTPError, OSError, sa.exc.OperationalError):
                pass
            time.sleep(0.2)
        raise TimeoutError(what)

    def scalar(self, sql: str, **params: Any) -> Any:
        with self.sm() as s:
            return s.scalar(sa.text(sql), params)

    def ledger(self) -> list[dict[str, Any]]:
        from velyrix.fleet.drivers.sim.remote import TwinClient

        client = TwinClient(f"http://127.0.0.1:{self.twin_port}", self.token_file.read_text(), "bench")
        try:
            return client.ledger()
        finally:
            client.close()

    def close(self) -> None:
        for proc in [*self.replicas.values(), self.standby, self.twin]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        self.engine.dispose()


def _tenant_key(world: World) -> str:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models

    with world.sm() as s:
        t = models.Tenant(name="bench", display_name="bench")
        s.add(t)
        s.flush()
        key = principals.issue_key(s, tenant_id=t.id, name="replica bench", role="owner")[1]
        s.commit()
    return key


def _start(world: World) -> str:
    from velyrix.testing import postgres

    world.wait("the twin", lambda: world.token_file.exists() and world.ledger() is not None)
    for _ in range(REPLICAS):
        world.start_replica(postgres.free_port())
    for port in world.replicas:
        world.wait("a replica", lambda port=port: httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200)
    world.wait(
        "intake", lambda: world.scalar("SELECT count(*) FROM nodes WHERE fleet_stage = 'production'") == world.nodes
    )
    return _tenant_key(world)


def _submit(world: World, key: str) -> None:
    ports = list(world.replicas)
    for i in range(CLUSTERS):
        port = ports[i % len(ports)]
        resp = httpx.post(
            f"http://127.0.0.1:{port}/v1/clusters",
            json=_spec(f"job{i:02d}"),
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        if resp.status_code != 201:
            raise RuntimeError(f"cluster job{i:02d}: {resp.status_code} {resp.text[:300]}")


def _orphaned_shards(world: World, victim: subprocess.Popen[bytes]) -> int:
    """Shards still named after ``victim`` or expired (no live holder)."""
    return int(
        world.scalar(
            "SELECT count(*) FROM reconcile_leases WHERE region = 'us-east-1' AND "
            "(holder LIKE :pid OR holder IS NULL OR expires_at <= clock_timestamp())",
            pid=f"%:{victim.pid}:%",
        )
        or 0
    )


def _run(world: World, key: str, kill: bool) -> dict[str, Any]:
    """Submit the clusters, kill (or not) every ``KILL_S``, wait for all Ready; returns the run's figures."""
    from velyrix.testing import postgres

    started = time.monotonic()
    _submit(world, key)
    rng = random.Random(14)
    next_kill = started + KILL_S
    failovers: list[float] = []
    late: list[float] = []  # how long each kill waited for two replicas to be up
    watching: tuple[subprocess.Popen[bytes], float] | None = None
    deadline = started + 900
    while time.monotonic() < deadline:
        ready = world.scalar("SELECT count(*) FROM clusters WHERE phase = 'Ready'")
        if ready == CLUSTERS:
            break
        now = time.monotonic()
        if watching is not None and _orphaned_shards(world, watching[0]) == 0:
            failovers.append(now - watching[1])
            watching = None
        up = world.ready() if kill and now >= next_kill else []
        if len(up) >= 2:  # never the last replica up, nor one still starting (then the kill waits)
            late.append(now - next_kill)
            port = rng.choice(sorted(up))
            victim = world.replicas.pop(port)
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
            world.kills.append((now - started, str(victim.pid)))
            watching = (victim, now)
            world.start_replica(postgres.free_port())  # three again (a fresh process, a new replica id)
            next_kill = now + KILL_S
        time.sleep(0.2)
    wall_s = time.monotonic() - started
    return {"wall_s": wall_s, "failovers": failovers, "late_max_s": max(late, default=0.0), **_checks(world)}


def _step(request_id: str) -> str:
    """``cluster/seq/kind/node`` of a reconciler's ``cluster/seq/kind/node/attempt`` (intake ids as they are)."""
    parts = request_id.split("/")
    return "/".join(parts[:4]) if len(parts) == 5 else request_id


def _checks(world: World) -> dict[str, Any]:
    """Ready clusters, double allocations, orphans and duplicated driver requests (see the module doc)."""
    with world.sm() as s:
        ready = s.scalar(sa.text("SELECT count(*) FROM clusters WHERE phase = 'Ready'"))
        allocated = Counter(
            s.scalars(sa.text("SELECT node_id FROM node_transitions WHERE to_state = 'allocated'")).all()
        )
        member = dict(s.execute(sa.text("SELECT name, cluster_id FROM nodes")).all())
        held_no_cluster = s.scalar(
            sa.text("SELECT count(*) FROM nodes WHERE cluster_id IS NULL AND provisioning_state IN :held").bindparams(
                sa.bindparam("held", expanding=True)
            ),
            {"held": list(HELD)},
        )
        short = s.scalar(
            sa.text(
                "SELECT count(*) FROM clusters c WHERE c.phase = 'Ready' AND c.node_count <> "
                "(SELECT count(*) FROM nodes n WHERE n.cluster_id = c.id AND n.provisioning_state = 'active')"
            )
        )
        epochs = s.scalar(sa.text("SELECT coalesce(sum(epoch), 0) FROM reconcile_leases"))
        actors = s.scalars(
            sa.text("SELECT DISTINCT actor FROM node_transitions WHERE actor LIKE 'reconciler/cluster@%'")
        )
        reconciled_by = {a.rsplit(":", 1)[1] for a in actors}
    ledger = world.ledger()
    twice = sum(1 for e in ledger if e["executions"] > 1)
    per_step = Counter(_step(e["request_id"]) for e in ledger if e["executions"])
    retried = sum(n - 1 for n in per_step.values() if n > 1)
    foreign = sum(  # the twin provisioned a node for a cluster the database does not have it in
        1 for e in ledger if e["kind"] == "provision" and member.get(e["node"]) != e["request_id"].split("/", 1)[0]
    )
    return {
        "ready": int(ready or 0),
        "double_allocations": sum(n - 1 for n in allocated.values() if n > 1),
        "orphans": int(held_no_cluster or 0) + int(short or 0) + foreign,
        "duplicated_requests": twice + retried,
        "requests": len(ledger),
        "takeovers": int(epochs or 0),
        "replicas_submitting": len({r for e in ledger for r in e["submitters"]} - {"bench"}),
        "intake_requests": sum(1 for e in ledger if e["request_id"].startswith("intake/")),
        "intake_shared": sum(  # an intake request submitted (or polled) by more than one replica
            1 for e in ledger if e["request_id"].startswith("intake/") and len(set(e["submitters"]) - {"bench"}) > 1
        ),
        "replicas_reconciling": len(reconciled_by),
    }


def _print(label: str, r: dict[str, Any], kills: int) -> None:
    fo = r["failovers"]
    failover = f"{max(fo):.1f} s max, {sum(fo) / len(fo):.1f} s mean" if fo else "-"
    print(
        f"| {label} | {r['ready']} / {CLUSTERS} | {r['wall_s']:.1f} s | {kills} | {r['takeovers']} | {failover} | "
        f"{r['double_allocations']} | {r['orphans']} | {r['duplicated_requests']} of {r['requests']} | "
        f"{r['replicas_submitting']} | {r['replicas_reconciling']} |",
        flush=True,
    )
    print(
        f"  ({label}: intake requests submitted by more than one replica: {r['intake_shared']} of "
        f"{r['intake_requests']})",
        flush=True,
    )


def main() -> None:
    from velyrix.testing import postgres

    if postgres.find_bin_dir() is None:
        print("PostgreSQL server binaries not installed: skipped")
        return
    print(
        f"{CLUSTERS} clusters x {NODES_PER_CLUSTER} nodes, {REPLICAS} replicas, lease {LEASE_S:g} s, "
        f"{SHARDS} shards, kill every {KILL_S:g} s, twin at {SPEED:g}x with delays; "
        f"load average at start {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    print(
        "| run | Ready | wall to all Ready | kills | lease epochs (holder changes) | failover | double allocations "
        "| orphans | duplicated driver requests | processes that submitted requests | that moved nodes |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    results = {}
    keep = os.environ.get("VELYRIX_BENCH_REPLICA_LOGS")  # a directory to keep the processes' logs in
    with postgres.PostgresServer.start() as pg, tempfile.TemporaryDirectory(dir=keep) as tmp:
        for label, kill in (("no kills", False), (f"SIGKILL every {KILL_S:g} s", True)):
            home = Path(tmp) / label.split()[0]
            home.mkdir()
            world = World(pg, "r" + label.split()[0].lower(), home)
            try:
                key = _start(world)
                results[label] = _run(world, key, kill)
                _print(label, results[label], len(world.kills))
            finally:
                world.close()
    base, killed = results["no kills"]["wall_s"], results[f"SIGKILL every {KILL_S:g} s"]["wall_s"]
    late = results[f"SIGKILL every {KILL_S:g} s"]["late_max_s"]
    print(f"wall with kills / without: {killed / base:.2f}x; a kill waited at most {late:.1f} s for two replicas up")
    print(f"load average at end {os.getloadavg()[0]:.1f}")
