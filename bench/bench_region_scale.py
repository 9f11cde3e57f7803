"""API latency against region size (issue 14): a 12,500-node twin region (100,000 GPUs) with 2,000 tenants
against a 1,000-node region with tenants in the same proportion, each seeded the product's way, then served by
the real ``velyrix server`` (uvicorn, SQLite in WAL mode under a temporary VELYRIX_HOME; both servers up at
once) and asked over loopback by one keep-alive HTTP client per server: ``GET /v1/clusters/{id}``,
``GET /v1/clusters?limit=20`` and ``GET /v1/nodes?limit=20``, each with the key of a tenant drawn at random,
requests alternating between the two regions so that the machine's other load falls on both alike. Target:
p99 of the large region within 2x of the small one, per route, in the same run.

Seeding (``_seed``, in a process of its own): the twin region's nodes are enrolled and taken in by the
runtime's own intake (``FleetRuntime.enroll``, driver delays off); each tenant is created as
``velyrix admin create-tenant`` does (tenant row, owner key through ``principals.issue_key``, audit
events); each declares two clusters as ``POST /v1/clusters`` stores them (spec validated, plan computed,
phases set) and each cluster is given its nodes by one bulk UPDATE per cluster, as an allocation leaves them
(node rows ``active`` with the cluster and tenant), not by running the reconciler's phases.

Environment (defaults are the issue's): ``VELYRIX_BENCH_REGION_NODES`` (``1000,12500``),
``VELYRIX_BENCH_REGION_TENANTS`` (``160,2000``), ``VELYRIX_BENCH_REGION_REQUESTS`` (requests per route and
size, ``1500``). CPU seconds per request are the server process's (``/proc``), so other load does not count.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

CLUSTER_SIZES = (2, 4)
"""Nodes of each tenant's two clusters: 6 per tenant, so 2,000 tenants hold 12,000 of 12,500 nodes."""
ROUTES = ("cluster", "clusters", "nodes")
WARM_TENANTS = 300
"""Tenants whose keys the run uses (each verified once before timing; the principal cache holds them)."""


def _seed_here(nodes: int, tenants: int) -> dict[str, Any]:
    """Seed the configured database (in this process): the region's nodes through the runtime's enrolment and
    intake, then ``tenants`` tenants with an owner key, an audit trail and two clusters each, holding nodes."""
    import sqlalchemy as sa

    from velyrix.cli import admin_audit
    from velyrix.controlplane import db
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import engine as db_engine
    from velyrix.controlplane.db import models
    from velyrix.controlplane.reconcile.runtime import FleetRuntime

    t0, c0 = time.perf_counter(), time.process_time()
    db.upgrade()
    factory = db_engine._default_factory(db_engine.database_url(None))
    runtime = FleetRuntime.twin(factory, "us-east-1", node_counts={"hgx-h200-8g": nodes}, seed=0, delays=False)
    enrolled = runtime.enroll()
    nodes_s = time.perf_counter() - t0
    plans: dict[int, dict[str, Any]] = {}
    out = []
    with db.session() as s:
        free = list(
            s.scalars(
                sa.select(models.Node.id)
                .where(models.Node.provisioning_state == "available", models.Node.fleet_stage == "production")
                .order_by(models.Node.name)
            )
        )
        for i in range(tenants):
            name = f"t{i:05d}"
            tenant = models.Tenant(name=name, display_name=name)
            s.add(tenant)
            s.flush()
            key, secret = principals.issue_key(s, tenant_id=tenant.id, name=f"{name} owner (bootstrap)", role="owner")
            admin_audit.record(s, "tenants.create", f"tenants/{tenant.id}", tenant.id)
            admin_audit.record(s, "api_keys.create", f"api-keys/{key.id}", tenant.id)
            clusters = []
            for j, size in enumerate(CLUSTER_SIZES):
                mine, free = free[:size], free[size:]
                clusters.append(_cluster(s, tenant.id, f"c{j}", size, mine, plans))
            out.append({"key": secret, "clusters": clusters})
            if i % 200 == 199:
                s.commit()
    return {
        "tenants": out,
        "enrolled": enrolled,
        "nodes_s": nodes_s,
        "seed_s": time.perf_counter() - t0,
        "seed_cpu_s": time.process_time() - c0,
    }


def _cluster(s: Any, tenant_id: str, name: str, size: int, node_ids: list[str], plans: dict[int, Any]) -> str:
    """One cluster as ``POST /v1/clusters`` stores it, then given ``node_ids`` the way an allocation leaves
    them (one bulk UPDATE), phases up to Ready; returns its id."""
    import sqlalchemy as sa

    from velyrix.controlplane import specs, status
    from velyrix.controlplane.db import models
    from velyrix.planners import plan as planner

    spec = specs.validate(
        specs.ClusterSpecBody(
            name=name,
            region="us-east-1",
            node_type="hgx-h200-8g",
            node_count=size,
            fabric="infiniband-ndr",
            scheduler="slurm",
            storage={"parallel_fs_tb": 100},
        )
    )
    if size not in plans:  # the plan is a pure function of the spec; these specs differ only by name
        plans[size] = planner.plan_cluster(spec)
    c = models.Cluster(
        tenant_id=tenant_id,
        name=spec.name,
        region=spec.region,
        node_type=spec.node_type,
        node_count=spec.node_count,
        spec=specs.to_body(spec),
        plan=plans[size],
        conditions=[],
        phase_history=[],
        events=[],
    )
    status.set_phase(c, "Pending", actor="bench", reason="cluster declared")
    status.set_condition(c, "Planned", True, "PlanComputed", "plan computed from the spec")
    s.add(c)
    s.flush()
    s.execute(
        sa.update(models.Node)
        .where(models.Node.id.in_(node_ids))
        .values(cluster_id=c.id, tenant_id=tenant_id, provisioning_state="active")
    )
    for phase in ("Allocating", "Provisioning", "Networking", "Storage", "Validating", "Ready"):
        status.set_phase(c, phase, actor="bench", reason="seeded as delivered")
    return str(c.id)


def _env_ints(name: str, default: str) -> list[int]:
    return [int(x) for x in os.environ.get(name, default).split(",")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _seed(env: dict[str, str], nodes: int, tenants: int) -> dict[str, Any]:
    """``_seed_here`` in a process of its own (the figures are its own time and CPU)."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "bench.bench_region_scale", "seed", str(nodes), str(tenants)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"seeding {nodes} nodes failed: {done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 900.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"velyrix server not ready at {url} (exit {proc.poll()})")


def _path(route: str, clusters: list[str], rng: random.Random) -> str:
    if route == "cluster":
        return f"/v1/clusters/{rng.choice(clusters)}"
    return f"/v1/{route}?limit=20"


class Region:
    """One seeded region served by its own ``velyrix server`` (a context manager: the server stops on exit)."""

    def __init__(self, nodes: int, tenants: int) -> None:
        self.nodes, self.tenants = nodes, tenants
        self._home = tempfile.TemporaryDirectory(prefix="velyrix-bench-region-")
        home = Path(self._home.name)
        self.env = {**os.environ, "VELYRIX_HOME": str(home)}
        self.env.pop("VELYRIX_DATABASE_URL", None)
        self.seeded = _seed(self.env, nodes, tenants)
        self.db_mb = sum(p.stat().st_size for p in home.glob("velyrix.db*")) / 1e6
        self.url = f"http://127.0.0.1:{_free_port()}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.figures: dict[str, dict[str, float]] = {}
        self.start_s = self.start_cpu_s = 0.0

    def __enter__(self) -> Region:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "velyrix.cli.main", "server", "--port", self.url.rsplit(":", 1)[1]],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        start = time.perf_counter()
        try:
            _wait_ready(self.url, self.proc)
        except BaseException:
            self.__exit__()
            raise
        self.start_s, self.start_cpu_s = time.perf_counter() - start, _cpu_s(self.proc.pid)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._home.cleanup()


def _measure(regions: list[Region], requests: int) -> None:
    """p50/p99 (ms) and server CPU per request (ms) of each route on each region, ``requests`` each, a
    tenant drawn at random for each; requests alternate between the regions, so that load from elsewhere on
    the machine falls on both alike. Fills each region's ``figures``."""
    rng = random.Random(14)
    clients = [httpx.Client(base_url=r.url, timeout=30) for r in regions]
    try:
        for region, client in zip(regions, clients, strict=True):  # warm: every key the run uses verified once
            for t in region.seeded["tenants"][:WARM_TENANTS]:
                auth = {"Authorization": f"Bearer {t['key']}"}
                client.get("/v1/clusters?limit=1", headers=auth).raise_for_status()
        for route in ROUTES:
            lat: list[list[float]] = [[] for _ in regions]
            cpu0 = [_cpu_s(r.proc.pid) for r in regions if r.proc is not None]
            for _ in range(requests):
                for i, (region, client) in enumerate(zip(regions, clients, strict=True)):
                    t = rng.choice(region.seeded["tenants"][:WARM_TENANTS])
                    path = _path(route, t["clusters"], rng)
                    start = time.perf_counter()
                    r = client.get(path, headers={"Authorization": f"Bearer {t['key']}"})
                    lat[i].append(time.perf_counter() - start)
                    if r.status_code != 200:
                        raise RuntimeError(f"{route}: HTTP {r.status_code} {r.text[:300]}")
            for i, region in enumerate(regions):
                assert region.proc is not None
                q = statistics.quantiles(lat[i], n=100)
                cpu = (_cpu_s(region.proc.pid) - cpu0[i]) / requests
                region.figures[route] = {"p50_ms": q[49] * 1e3, "p99_ms": q[98] * 1e3, "cpu_ms": cpu * 1e3}
    finally:
        for client in clients:
            client.close()


def main() -> None:
    sizes = _env_ints("VELYRIX_BENCH_REGION_NODES", "1000,12500")
    tenant_counts = _env_ints("VELYRIX_BENCH_REGION_TENANTS", "160,2000")
    requests = int(os.environ.get("VELYRIX_BENCH_REGION_REQUESTS", "1500"))
    regions = [Region(n, t) for n, t in zip(sizes, tenant_counts, strict=True)]
    with contextlib.ExitStack() as stack:
        for region in regions:
            stack.enter_context(region)
        _measure(regions, requests)
    rows = [
        {
            "nodes": r.nodes,
            "tenants": r.tenants,
            "clusters": r.tenants * len(CLUSTER_SIZES),
            "seed_s": r.seeded["seed_s"],
            "seed_cpu_s": r.seeded["seed_cpu_s"],
            "db_mb": r.db_mb,
            "start_s": r.start_s,
            "start_cpu_s": r.start_cpu_s,
            "routes": r.figures,
        }
        for r in regions
    ]
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores); {requests} requests per route and size")
    print(
        f"{'nodes':>6} {'tenants':>7} {'clusters':>8} {'seed s':>7} {'seed CPU s':>10} {'DB MB':>6} "
        f"{'server ready s':>14} {'its CPU s':>9}"
    )
    for r in rows:
        print(
            f"{r['nodes']:>6} {r['tenants']:>7} {r['clusters']:>8} {r['seed_s']:>7.1f} {r['seed_cpu_s']:>10.1f} "
            f"{r['db_mb']:>6.1f} {r['start_s']:>14.1f} {r['start_cpu_s']:>9.1f}"
        )
    print(f"{'route':<32} {'nodes':>6} {'p50 ms':>7} {'p99 ms':>7} {'CPU ms/req':>10}")
    for route in ROUTES:
        for r in rows:
            f = r["routes"][route]
            label = _path(route, ["{id}"], random.Random(0))
            print(f"GET {label:<28} {r['nodes']:>6} {f['p50_ms']:>7.2f} {f['p99_ms']:>7.2f} {f['cpu_ms']:>10.2f}")
    small, big = rows[0], rows[-1]
    for route in ROUTES:
        p99 = big["routes"][route]["p99_ms"] / small["routes"][route]["p99_ms"]
        cpu = big["routes"][route]["cpu_ms"] / small["routes"][route]["cpu_ms"]
        verdict = "OK" if p99 <= 2.0 else "OVER"
        print(
            f"{route}: p99 {big['nodes']} vs {small['nodes']} nodes {p99:.2f}x (target <= 2x: {verdict}), "
            f"CPU {cpu:.2f}x"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["seed"]:
        print(json.dumps(_seed_here(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
