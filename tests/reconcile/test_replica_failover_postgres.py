"""Two ``velyrix server --fleet-driver`` replicas on one PostgreSQL drive one twin (``velyrix sim serve``). The
replica holding a cluster's lease is SIGKILLed mid-apply: the other takes the shard over once the lease
expires and finishes the cluster; the twin executed no request twice and nothing is orphaned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from tests.reconcile.world import body, check_invariants
from velyrix import errors
from velyrix.cli import sim_serve
from velyrix.controlplane import db
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import leases, phases
from velyrix.fleet.drivers.sim.remote import TwinClient
from velyrix.testing import postgres

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
NODES = 24
MID_APPLY = (phases.PROVISIONING, phases.NETWORKING, phases.STORAGE, phases.VALIDATING)


def _velyrix(home: Path, url: str | None, *args: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "VELYRIX_HOME": str(home),
        "VELYRIX_RECONCILE_POLL_S": "0.05",
        "VELYRIX_RECONCILE_IDLE_S": "0.2",
    }
    env.pop("VELYRIX_DATABASE_URL", None)
    if url:
        env["VELYRIX_DATABASE_URL"] = url
    cmd = [sys.executable, "-m", "velyrix.cli.main", *args]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait(what: str, check: object, procs: list[subprocess.Popen[bytes]], timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert all(p.poll() is None for p in procs), f"a process exited while waiting for {what}"
        try:
            if check():  # type: ignore[operator]
                return
        except (httpx.TransportError, sa.exc.OperationalError):
            pass
        time.sleep(0.1)
    raise TimeoutError(what)


def test_sigkilled_replica_cluster_finished_by_the_other(tmp_path: Path) -> None:
    if postgres.find_bin_dir() is None:
        pytest.skip("PostgreSQL server binaries not installed (scripts/apt-packages.txt lists them)")
    token_file = tmp_path / "twin.token"
    twin_port = postgres.free_port()
    with postgres.PostgresServer.start() as pg:
        url = pg.create_database("failover")
        engine = db.make_engine(url)
        db.upgrade(url=url, engine=engine)
        sm = orm.sessionmaker(engine, expire_on_commit=False)
        with sm() as s:
            t = models.Tenant(name="acme", display_name="acme")
            s.add(t)
            s.flush()
            key = principals.issue_key(s, tenant_id=t.id, name="failover test", role="owner")[1]
            s.commit()
        twin_args = ["--port", str(twin_port), "--nodes", f"hgx-h200-8g={NODES}", "--seed", "1", "--speed", "600"]
        twin = _velyrix(tmp_path, None, "sim", "serve", *twin_args, "--token-file", str(token_file))
        procs = [twin]
        try:
            _wait("the twin", lambda: token_file.exists() and _twin_up(twin_port, token_file), procs)
            ports = [postgres.free_port(), postgres.free_port()]
            replicas = [
                _velyrix(
                    tmp_path,
                    url,
                    "server",
                    "--port",
                    str(p),
                    "--fleet-driver",
                    f"http://127.0.0.1:{twin_port}",
                    "--fleet-token-file",
                    str(token_file),
                    "--lease-s",
                    "2",
                )
                for p in ports
            ]
            procs += replicas
            for p in ports:
                _wait("a replica", lambda p=p: httpx.get(f"http://127.0.0.1:{p}/healthz").status_code == 200, procs)
            _wait("intake", lambda: _count(sm, models.Node.fleet_stage == "production") == NODES, procs)
            headers = {"Authorization": f"Bearer {key}"}
            created = httpx.post(f"http://127.0.0.1:{ports[0]}/v1/clusters", json=body("job", 4), headers=headers)
            assert created.status_code == 201, created.text
            cid = created.json()["id"]
            _wait("mid-apply", lambda: _phase(sm, cid) in MID_APPLY, procs)
            holder = _holder(sm, cid)
            victim = next(r for r in replicas if holder.split(":")[1] == str(r.pid))
            survivor = next(r for r in replicas if r is not victim)
            killed_in = _phase(sm, cid)
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
            procs.remove(victim)
            _wait("Ready after the kill", lambda: _phase(sm, cid) == phases.READY, procs)
            assert _holder(sm, cid).split(":")[1] == str(survivor.pid)
            ledger = TwinClient(f"http://127.0.0.1:{twin_port}", token_file.read_text(), "test").ledger()
        finally:
            for p in procs:
                p.send_signal(signal.SIGKILL)
                p.wait(10)
        assert killed_in in MID_APPLY
        mine = [e for e in ledger if e["request_id"].startswith(cid)]
        assert mine and all(e["executions"] <= 1 for e in ledger)  # the twin ran no request twice
        work = Counter(e["request_id"].rsplit("/", 1)[0] for e in mine)  # cluster/seq/kind/node, any attempt
        assert max(work.values()) == 1, work  # and no step twice under another request id
        with sm() as s:
            actors = set(
                s.scalars(
                    sa.select(models.NodeTransition.actor).where(
                        models.NodeTransition.actor.like("reconciler/cluster@%")
                    )
                )
            )
        pids = {a.rsplit(":", 1)[1] for a in actors}
        assert pids == {str(victim.pid), str(survivor.pid)}, actors  # begun by one, finished by the other
        check_invariants(sm)
        engine.dispose()


def _twin_up(port: int, token_file: Path) -> bool:
    client = TwinClient(f"http://127.0.0.1:{port}", sim_serve.read_or_create_token(token_file), "test")
    try:
        return len(client.list_nodes()) == NODES
    except errors.RemoteError:  # the token file is written before the twin listens
        return False
    finally:
        client.close()


def _count(sm: orm.sessionmaker[orm.Session], where: sa.ColumnElement[bool]) -> int:
    with sm() as s:
        return int(s.scalar(sa.select(sa.func.count()).select_from(models.Node).where(where)) or 0)


def _phase(sm: orm.sessionmaker[orm.Session], cid: str) -> str:
    with sm() as s:
        c = s.get(models.Cluster, cid)
        return c.phase if c is not None else ""


def _holder(sm: orm.sessionmaker[orm.Session], cid: str) -> str:
    with sm() as s:
        holder = s.scalar(
            sa.text("SELECT holder FROM reconcile_leases WHERE region = 'us-east-1' AND shard = :k"),
            {"k": leases.shard_of(cid, leases.DEFAULT_SHARDS)},
        )
        return str(holder)
