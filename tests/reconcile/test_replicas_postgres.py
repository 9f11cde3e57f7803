"""Two ``velyrix up`` replicas on one PostgreSQL take 10 cluster requests at once for scarce capacity: claims
under advisory locks mean no node is allocated twice, no VLAN or partition key is reused, and the clusters that
cannot be served fail with a clear capacity error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy import orm

from tests.reconcile.world import body, check_invariants
from velyrix.controlplane import db
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import phases, tables
from velyrix.testing import postgres

pytestmark = pytest.mark.postgres


def _replica(home: Path, url: str, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "VELYRIX_HOME": str(home),
        "VELYRIX_DATABASE_URL": url,
        "VELYRIX_RECONCILE_POLL_S": "0.01",
        "VELYRIX_RECONCILE_IDLE_S": "0.05",
        "VELYRIX_SIGNING_KEY_DIR": str(home / "keys"),
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "velyrix.cli.main",
            "up",
            "--no-delays",
            "--port",
            str(port),
            "--nodes",
            "hgx-h200-8g=96",
            "--seed",
            "1",
            "--exporter-port",  # each replica its own (the default port is one per machine)
            str(postgres.free_port()),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _healthy(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "replica exited"
        try:
            if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise TimeoutError(base)


def test_two_replicas_ten_clusters_scarce_capacity(tmp_path: Path) -> None:
    if postgres.find_bin_dir() is None:
        pytest.skip("PostgreSQL server binaries not installed (scripts/apt-packages.txt lists them)")
    with postgres.PostgresServer.start() as pg:
        url = pg.create_database("replicas")
        engine = db.make_engine(url)
        db.upgrade(url=url, engine=engine)
        sm = orm.sessionmaker(engine, expire_on_commit=False)
        with sm() as s:
            tenants = []
            for name in ("acme", "globex"):
                t = models.Tenant(name=name, display_name=name)
                s.add(t)
                s.flush()
                tenants.append(principals.issue_key(s, tenant_id=t.id, name="replica test", role="owner")[1])
            s.commit()
        ports = [postgres.free_port(), postgres.free_port()]
        procs = [_replica(tmp_path, url, p) for p in ports]
        try:
            for port, proc in zip(ports, procs, strict=True):
                _healthy(f"http://127.0.0.1:{port}", proc)

            def submit(i: int) -> int:
                # 10 x 16 nodes asked for, 91 sellable (96 minus 5 spares): 5 can be served
                with httpx.Client(
                    base_url=f"http://127.0.0.1:{ports[i % 2]}",
                    timeout=30,
                    headers={"Authorization": f"Bearer {tenants[i % 2]}"},
                ) as http:
                    return http.post("/v1/clusters", json=body(f"job{i}", 16)).status_code

            with ThreadPoolExecutor(10) as pool:
                codes = list(pool.map(submit, range(10)))
            # checked against the fleet under one advisory lock across both replicas: 5 fit, 5 are refused
            assert sorted(codes) == [201] * 5 + [409] * 5, codes
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                with sm() as s:
                    unsettled = s.scalar(
                        sa.select(sa.func.count())
                        .select_from(models.Cluster)
                        .where(models.Cluster.phase.not_in([phases.READY, phases.FAILED]))
                    )
                if not unsettled:
                    break
                time.sleep(0.2)
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
        with sm() as s:
            clusters = list(s.scalars(sa.select(models.Cluster)))
            ready = [c for c in clusters if c.phase == phases.READY]
            failed = [c for c in clusters if c.phase == phases.FAILED]
            assert len(ready) == 5 and not failed and len(clusters) == 5, Counter(c.phase for c in clusters)
            allocations = Counter(
                s.scalars(sa.select(models.NodeTransition.node_id).where(models.NodeTransition.to_state == "allocated"))
            )
            assert sum(allocations.values()) == 80 and max(allocations.values()) == 1  # no node allocated twice
            nets = s.execute(sa.select(tables.NetworkAllocation.kind, tables.NetworkAllocation.value)).all()
            assert Counter(k for k, _ in nets) == {"vlan": 5, "pkey": 5} and len(set(nets)) == 10
            actors = set(
                s.scalars(
                    sa.select(models.NodeTransition.actor).where(
                        models.NodeTransition.actor.like("reconciler/cluster@%")
                    )
                )
            )
            assert len({a.rsplit(":", 1)[1] for a in actors}) == 2, actors  # both replicas did work
        check_invariants(sm)
        engine.dispose()
