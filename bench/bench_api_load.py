"""Control-plane API under load (issue 14): ``wrk`` on loopback at 1, 16, 64 and 256 connections, on SQLite
and PostgreSQL, for an authenticated ``GET /v1/clusters/{id}``, the list of 20 clusters, and
``POST /v1/volumes`` with an ``Idempotency-Key`` (a new key and name per request), beside a bare FastAPI
route on the same app and uvicorn (uvloop, httptools, access log on, as ``velyrix server`` runs).

Checked in the same run, and printed: no stall (a side prober asks ``/healthz`` every 0.1 s with a 1 s
timeout throughout; its slowest answer is printed, beside the same probe of a control: Python's
``http.server`` in a process of its own, which shows what the shared machine itself delays), no 5xx but
503 with ``Retry-After`` (wrk's Lua counts every status), every 201 of the POST runs present exactly once
in the database afterwards; and the ratio authenticated GET / bare route per connection count.

``BENCH_API_LOAD_S`` sets the seconds per run (default 30, as issue 14 asks; e.g. 5 for a short run);
``BENCH_API_LOAD_BACKENDS`` (``sqlite,postgresql``), ``BENCH_API_LOAD_CONNECTIONS`` (``1,16,64,256``) and
``BENCH_API_LOAD_KINDS`` (``bare,get,list,post``) run a part. Rates and ratios count the requests served
(answers other than 503); the 503s the server answered instead (``server_busy``, ``database_busy``) are listed.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CONNECTIONS = tuple(int(c) for c in os.environ.get("BENCH_API_LOAD_CONNECTIONS", "1,16,64,256").split(","))
SECONDS = int(os.environ.get("BENCH_API_LOAD_S", "30"))
BACKENDS = os.environ.get("BENCH_API_LOAD_BACKENDS", "sqlite,postgresql").split(",")
KINDS = os.environ.get("BENCH_API_LOAD_KINDS", "bare,get,list,post").split(",")
CLUSTERS = 20
PROBE_EVERY_S, PROBE_TIMEOUT_S = 0.1, 1.0

SERVER = """
import logging, sys
from velyrix.cli import serving
from velyrix.ops.service import create_app
logging.basicConfig(level=logging.INFO, filename=sys.argv[3], format="%(asctime)s %(levelname)s %(name)s %(message)s")
logging.getLogger("alembic").setLevel(logging.WARNING)
app = create_app(sys.argv[1])
@app.get("/bench/bare")
async def bare() -> dict[str, str]:
    return {"status": "ok"}
serving.serve(app, "127.0.0.1", int(sys.argv[2]))
"""
"""``velyrix server``'s logging and serving (cli/server.py, cli/serving.py), plus the bare route."""

LUA = """
local kind, prefix = "%(kind)s", "%(prefix)s"
local counter, threads = 0, {}
function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end
function init(args)
  statuses, names, n, no_retry_after = {}, {}, 0, 0
end
function request()
  if kind ~= "post" then return wrk.request() end
  n = n + 1
  local name = prefix .. id .. "-" .. n
  local body = '{"name":"' .. name .. '","region":"us-east-1","tier":"block","size_tb":1}'
  wrk.headers["Idempotency-Key"] = name
  wrk.headers["Content-Type"] = "application/json"
  return wrk.format("POST", nil, nil, body)
end
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 503 and headers["Retry-After"] == nil and headers["retry-after"] == nil then
    no_retry_after = no_retry_after + 1
  end
  if kind == "post" and status == 201 then
    table.insert(names, string.match(body, '"name":"([^"]+)"'))
  end
end
function done(summary, latency, requests)
  local out = io.open("%(out)s", "w")
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    for code, count in pairs(s) do out:write("status ", code, " ", count, "\\n") end
    out:write("no_retry_after ", t:get("no_retry_after"), "\\n")
    for _, name in ipairs(t:get("names")) do out:write("created ", name, "\\n") end
  end
  out:write("p99_ms ", latency:percentile(99) / 1000, "\\n")
  out:close()
end
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _setup(url: str) -> tuple[str, str, Any]:
    """A tenant, its owner key, ``CLUSTERS`` clusters and free nodes, in the database: (key, one cluster
    id, sessionmaker)."""
    from sqlalchemy import orm

    from velyrix.controlplane import specs, status
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import engine, migrate, models
    from velyrix.planners import plan

    eng = engine.make_engine(url)
    migrate.upgrade(engine=eng, url=url)
    maker = orm.sessionmaker(eng, expire_on_commit=False)
    with maker() as s:
        t = models.Tenant(name="bench", display_name="Bench")
        s.add(t)
        s.flush()
        _, secret = principals.issue_key(s, tenant_id=t.id, name="bench", role="owner")
        spec = specs.validate(
            specs.ClusterSpecBody(
                name="bench", region="us-east-1", node_type="hgx-h200-8g", node_count=64, fabric="infiniband-ndr",
                scheduler="slurm", storage={"parallel_fs_tb": 800},
            )
        )  # fmt: skip
        ids = []
        for i in range(CLUSTERS):
            c = models.Cluster(
                tenant_id=t.id, name=f"bench-{i}", region=spec.region, node_type=spec.node_type,
                node_count=spec.node_count, spec=specs.to_body(spec), plan=plan.plan_cluster(spec), conditions=[],
                phase_history=[], events=[],
            )  # fmt: skip
            status.set_phase(c, "Pending", actor="bench", reason="bench")
            s.add(c)
            s.flush()
            ids.append(c.id)
        s.commit()
    return secret, ids[0], maker


CONTROL = """
import http.server, sys
class Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Ok).serve_forever()
"""


class Probe:
    """One target's answers: how many, the slowest (s), how many slower than ``PROBE_TIMEOUT_S`` or failed."""

    def __init__(self, port: int, path: str) -> None:
        self.port, self.path, self.probes, self.slowest_s, self.stalls = port, path, 0, 0.0, 0
        self.run = "start"
        self.stalls_by_run: dict[str, int] = {}

    def once(self) -> None:
        start = time.monotonic()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=PROBE_TIMEOUT_S)
            conn.request("GET", self.path)
            ok = conn.getresponse().status == 200
            conn.close()
        except OSError:
            ok = False
        took = time.monotonic() - start
        self.probes += 1
        self.slowest_s = max(self.slowest_s, took)
        if not ok or took > PROBE_TIMEOUT_S:
            self.stalls += 1
            self.stalls_by_run[self.run] = self.stalls_by_run.get(self.run, 0) + 1

    def line(self, label: str) -> str:
        return (f"{label}: {self.probes} probes, slowest {self.slowest_s * 1000:.0f} ms, "
                f"{self.stalls} over {PROBE_TIMEOUT_S:g} s or failed {self.stalls_by_run or ''}")  # fmt: skip


class Prober(threading.Thread):
    """Every ``PROBE_EVERY_S``: ``GET /healthz`` of the API, then ``GET /`` of the control server."""

    def __init__(self, port: int, control_port: int) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.api, self.control = Probe(port, "/healthz"), Probe(control_port, "/")

    def run(self) -> None:
        while not self.stop.wait(PROBE_EVERY_S):
            self.api.once()
            self.control.once()


def _wrk(url: str, key: str | None, kind: str, connections: int, tmp: Path, prefix: str) -> dict[str, Any]:
    out, script = tmp / "wrk.out", tmp / "wrk.lua"
    script.write_text(LUA % {"kind": kind, "prefix": prefix, "out": out})
    cmd = ["wrk", "-t2" if connections > 1 else "-t1", f"-c{connections}", f"-d{SECONDS}s", "--timeout", "10s"]
    cmd += ["-s", str(script)]
    if key:
        cmd += ["-H", f"Authorization: Bearer {key}"]
    text = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    statuses: dict[int, int] = {}
    created: list[str] = []
    no_retry_after, p99_ms = 0, 0.0
    for line in out.read_text().splitlines():
        word, _, rest = line.partition(" ")
        if word == "status":
            code, count = rest.split()
            statuses[int(code)] = statuses.get(int(code), 0) + int(count)
        elif word == "created":
            created.append(rest)
        elif word == "no_retry_after":
            no_retry_after += int(rest)
        elif word == "p99_ms":
            p99_ms = float(rest)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))  # type: ignore[union-attr]
    errors = re.search(r"Socket errors: (.*)", text)
    return {
        "rate": rate, "statuses": statuses, "created": created, "no_retry_after": no_retry_after,
        "p99_ms": p99_ms, "socket_errors": errors.group(1) if errors else "",
    }  # fmt: skip


def _backend(name: str, url: str, tmp: Path) -> list[str]:
    """Every run on one database; returns the problems found (empty: all checks hold)."""
    key, cluster_id, maker = _setup(url)
    port = _free_port()
    log = tmp / f"{name}-server.log"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, url, str(port), str(log)],
        env={**os.environ, "VELYRIX_HOME": str(tmp / name)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    control_port = _free_port()
    control = subprocess.Popen([sys.executable, "-c", CONTROL, str(control_port)])
    problems: list[str] = []
    prober = Prober(port, control_port)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the API server did not start") from None
                time.sleep(0.1)
        base = f"http://127.0.0.1:{port}"
        prober.start()
        runs = tuple(
            run
            for run in (
                ("bare", f"{base}/bench/bare", None),
                ("get", f"{base}/v1/clusters/{cluster_id}", key),
                ("list", f"{base}/v1/clusters?limit={CLUSTERS}", key),
                ("post", f"{base}/v1/volumes", key),
            )
            if run[0] in KINDS
        )
        created: list[str] = []
        rates: dict[tuple[str, int], float] = {}
        print(f"--- {name}: {SECONDS} s per run; req/s, p99 ms, statuses")
        for connections in CONNECTIONS:
            for kind, target, auth in runs:
                prober.api.run = prober.control.run = f"{kind} c={connections}"
                r = _wrk(target, auth, kind, connections, tmp, f"v{connections}-")
                answers = sum(r["statuses"].values())
                rates[kind, connections] = r["rate"] * (answers - r["statuses"].get(503, 0)) / max(answers, 1)
                created += r["created"]
                bad = {s: n for s, n in r["statuses"].items() if s >= 500 and s != 503}
                if bad or r["no_retry_after"]:
                    problems.append(f"{name} {kind} c={connections}: 5xx {bad}, 503 without Retry-After "
                                    f"{r['no_retry_after']}")  # fmt: skip
                print(f"{name:10s} {kind:5s} c={connections:<4d} {rates[kind, connections]:8.0f} req/s served "
                      f"({r['rate']:.0f} answered)  p99 {r['p99_ms']:8.1f} ms  "
                      f"{dict(sorted(r['statuses'].items()))} {r['socket_errors']}", flush=True)  # fmt: skip
        for connections in CONNECTIONS:
            if ("get", connections) in rates and rates.get(("bare", connections)):
                ratio = rates["get", connections] / rates["bare", connections]
                print(f"{name:10s} authenticated GET / bare route at c={connections} (served): {ratio:.2f}")
    finally:
        prober.stop.set()
        prober.join()
        server.terminate()
        server.wait(timeout=30)
        control.terminate()
        control.wait(timeout=30)
    print(f"{name:10s} " + prober.api.line("/healthz"))
    print(f"{name:10s} " + prober.control.line("control (http.server, own process)"))
    if prober.api.stalls:
        problems.append(f"{name}: {prober.api.stalls} /healthz probes over {PROBE_TIMEOUT_S:g} s "
                        f"(control: {prober.control.stalls})")  # fmt: skip
    problems += _exactly_once(name, maker, created)
    return problems


def _exactly_once(name: str, maker: Any, created: list[str]) -> list[str]:
    """Every volume a 201 answered for is in the database once, and no other bench volume is."""
    import sqlalchemy as sa

    from velyrix.controlplane.db import models

    with maker() as s:
        stored = [n for (n,) in s.execute(sa.select(models.Volume.name).where(models.Volume.name.like("v%-%")))]
    extra, missing = sorted(set(stored) - set(created)), sorted(set(created) - set(stored))
    dupes = len(stored) - len(set(stored)) + len(created) - len(set(created))
    print(f"{name:10s} POST: {len(created)} answered 201, {len(stored)} stored; missing {len(missing)}, "
          f"duplicated {dupes}; stored without a 201 seen {len(extra)} (at most the {sum(CONNECTIONS)} "
          "requests in flight when wrk stops a run)")  # fmt: skip
    return [f"{name}: POST missing {missing[:5]} extra {extra[:5]} dupes {dupes}"] if missing or dupes else []


def main() -> None:
    if not shutil.which("wrk"):
        print("wrk is not installed (Debian package wrk): skipped")
        return
    from velyrix.testing import postgres

    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="velyrix-bench-load-") as tmp_name:
        tmp = Path(tmp_name)
        for name in ("sqlite", "postgresql"):
            (tmp / name).mkdir()
        if "sqlite" in BACKENDS:
            problems += _backend("sqlite", f"sqlite:///{tmp / 'sqlite' / 'velyrix.db'}", tmp)
        if "postgresql" not in BACKENDS:
            pass
        elif postgres.find_bin_dir() is None:
            problems.append("postgresql: no PostgreSQL binaries here")
        else:
            with postgres.PostgresServer.start() as pg:
                problems += _backend("postgresql", pg.create_database("bench"), tmp)
    print("all checks hold" if not problems else "PROBLEMS:\n  " + "\n  ".join(problems))
    print(json.dumps({"problems": problems}))


if __name__ == "__main__":
    main()
