"""SIGKILL the server (API + reconcilers + twin) at random points while clusters are applied and destroyed,
restart it each time: every cluster still reaches Ready (or Deleted), no node is allocated twice, nothing is
orphaned. The twin runs with delays off so the test stays fast; its state is rebuilt from the seed at restart,
as after a real crash the reconcilers resubmit what the database says is in flight."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from tests.reconcile.world import body, check_invariants
from velyrix.controlplane import db
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import phases
from velyrix.testing.postgres import free_port

KILLS = int(os.environ.get("VELYRIX_CRASH_KILLS", "20"))
"""Kills that must land while a cluster is mid-apply or mid-destroy (more kills happen; at most MAX_ROUNDS)."""
MAX_ROUNDS = 90  # the loop stops at KILLS; a loaded machine finishes applies between kills more often


_STANDBY = """
import sys
from velyrix.cli import main
import uvicorn, velyrix.controlplane.api, velyrix.controlplane.reconcile.runtime  # noqa: F401  (warm imports)
sys.stdin.readline()
sys.argv = ["velyrix"] + sys.argv[1:]
main.run()
"""


class Server:
    """``velyrix up`` in a fresh process. The next process is spawned (imports done, waiting on stdin) while
    the current one runs, so a restart costs the real startup (database, migrations, twin, enrollment,
    resume) but not the Python imports."""

    def __init__(self, home: Path, port: int) -> None:
        self.env = {
            **os.environ,
            "VELYRIX_HOME": str(home),
            "VELYRIX_RECONCILE_POLL_S": "0.01",
            "VELYRIX_RECONCILE_IDLE_S": "0.05",
        }
        self.env.pop("VELYRIX_DATABASE_URL", None)
        self.args = ["up", "--no-delays", "--port", str(port), "--nodes", "hgx-h200-8g=96", "--seed", "1"]
        self.args += ["--exporter-port", str(free_port())]  # not the default port: tests run side by side
        self.standby = self._spawn()
        self.proc = self.standby

    def _spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-c", _STANDBY, *self.args],
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def start(self) -> subprocess.Popen[bytes]:
        self.proc = self.standby
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()
        self.standby = self._spawn()
        return self.proc

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        for p in (self.proc, self.standby):
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(10)


def _wait_healthy(http: httpx.Client, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, "server exited"
        try:
            if http.get("/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError("server did not come up")


def test_sigkill_at_random_points_then_resume(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'velyrix.db'}"
    engine = db.make_engine(url)
    db.upgrade(url=url, engine=engine)
    sm = orm.sessionmaker(engine, expire_on_commit=False)
    with sm() as s:
        tenant = models.Tenant(name="acme", display_name="ACME")
        s.add(tenant)
        s.flush()
        _, key = principals.issue_key(s, tenant_id=tenant.id, name="crash test", role="owner")
        s.commit()
    port = free_port()
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    rng = random.Random(20261130)
    created: list[str] = []
    destroyed: set[str] = set()
    in_flight_kills = 0
    server = Server(tmp_path, port)
    proc = server.start()
    try:
        for i in range(MAX_ROUNDS):
            if in_flight_kills >= KILLS:
                break
            t_round = time.monotonic()
            _wait_healthy(http, proc)
            with sm() as s:
                live = s.execute(
                    sa.select(models.Cluster.id, models.Cluster.phase).where(models.Cluster.phase != phases.DELETED)
                ).all()
            ready = [cid for cid, phase in live if phase == phases.READY and cid not in destroyed]
            if len(live) < 3:
                r = http.post("/v1/clusters", json=body(f"c{i}", rng.choice([8, 16, 24])))  # 3 x 24 fit in 91
                assert r.status_code == 201, r.text
                created.append(r.json()["id"])
            elif ready:
                victim = rng.choice(ready)
                assert http.post(f"/v1/clusters/{victim}/destroy", json={}).status_code == 202
                destroyed.add(victim)
            time.sleep(rng.uniform(0.0, 0.2))
            server.kill()
            with sm() as s:
                busy = s.scalar(
                    sa.select(sa.func.count())
                    .select_from(models.Cluster)
                    .where(models.Cluster.phase.in_([*phases.ACTIVE_PHASES, phases.DELETING]))
                )
            in_flight_kills += bool(busy)
            if os.environ.get("VELYRIX_CRASH_DEBUG"):
                print(i, len(live), len(ready), busy, round(time.monotonic() - t_round, 2), flush=True)
            check_invariants(sm)  # holds at every kill: each reconcile step commits atomically
            proc = server.start()
        _wait_healthy(http, proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with sm() as s:
                pending = s.scalar(
                    sa.select(sa.func.count())
                    .select_from(models.Cluster)
                    .where(models.Cluster.phase.not_in([phases.READY, phases.DELETED]))
                )
            if not pending:
                break
            time.sleep(0.1)
    finally:
        server.close()
        http.close()
    assert in_flight_kills >= KILLS, f"only {in_flight_kills} kills landed mid-apply in {MAX_ROUNDS} rounds"
    with sm() as s:
        for cid in created:
            c = s.get(models.Cluster, cid)
            assert c is not None
            assert c.phase == (phases.DELETED if cid in destroyed else phases.READY), (c.name, c.phase, c.events[-3:])
            assert phases.READY in [h["phase"] for h in c.phase_history]
        # no node was ever allocated while allocated: every ALLOCATED move starts from AVAILABLE
        moves = (
            s.execute(sa.select(models.NodeTransition.from_state).where(models.NodeTransition.to_state == "allocated"))
            .scalars()
            .all()
        )
        assert moves and set(moves) == {"available"}
    check_invariants(sm)
    _check_twin_matches_database(sm, tmp_path / "twin-us-east-1-1.json")
    engine.dispose()


def _check_twin_matches_database(sm: orm.sessionmaker[orm.Session], state_file: Path) -> None:
    """The twin's hardware (saved across the kills like real hardware) agrees with the database: delivered
    nodes carry their cluster's VLAN and partition key; free nodes carry no tenant network or data."""
    from velyrix.controlplane.reconcile import tables, twin_state
    from velyrix.fleet import states

    saved = twin_state.load(state_file)  # the snapshot with the journal of touched nodes replayed
    assert saved is not None
    twin = saved["nodes"]
    with sm() as s:
        nets: dict[str, dict[str, int]] = {}
        for a in s.scalars(sa.select(tables.NetworkAllocation)):
            nets.setdefault(a.cluster_id, {})[a.kind] = a.value
        for node in s.scalars(sa.select(models.Node)):
            hw = twin[node.name]
            if node.cluster_id is None:
                assert hw["networks"] is None and not hw["tenant_data"] and not hw["mounts"], node.name
            elif node.provisioning_state == states.ACTIVE:
                assert hw["networks"]["vlan"] == nets[node.cluster_id]["vlan"], node.name
                assert hw["networks"]["pkey"] == nets[node.cluster_id]["pkey"], node.name
                assert hw["image"] and hw["tenant_data"] and hw["mounts"], node.name


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
