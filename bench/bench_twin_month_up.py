"""A 30-day month on ``velyrix up``: the real command (API, reconcile thread, twin, one agent per twin node,
the NOC's escalation sweeps) at ``--speed 20000`` (30 simulated days = 129.6 wall seconds) with its clock
started on 2026-10-28, a real SMTP server (aiosmtpd) taking the pages.

Two tenants, one 4-node cluster each, on a twin of 10 H200 nodes (2 spares). GPU row-remap failures (an RMA
criterion) are injected through the API on Nov 10 (acme: replaced by a spare), Nov 15 (bravo: replaced by
the last spare) and Nov 20 (acme: no spare left, the cluster runs short to the month's end: a P1 that
nobody acknowledges, so escalation pages every level). On Dec 1 the month is closed through the API; the
SLA reports, invoices and credit notes are read back and checked against the injected times.

Prints the wall seconds of the simulated month (Nov 1 -> Dec 1 as read from the twin), the lag of each
injection and of the detection in simulated minutes, the close, the availability and credit per cluster
and the pages received. Recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

UTC = dt.UTC
SPEED = 20_000.0
EPOCH = dt.datetime(2026, 10, 28, tzinfo=UTC)  # provisioning and acceptance take about a simulated day
NOV, DEC = dt.datetime(2026, 11, 1, tzinfo=UTC), dt.datetime(2026, 12, 1, tzinfo=UTC)
FAULTS = (("acme", dt.datetime(2026, 11, 10, tzinfo=UTC)), ("bravo", dt.datetime(2026, 11, 15, tzinfo=UTC)))
SHORT = ("acme", dt.datetime(2026, 11, 20, tzinfo=UTC))


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _velyrix(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "velyrix.cli.main", *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"velyrix {' '.join(args)}: {done.stderr[-500:]}")
    return done.stdout.strip().splitlines()[-1]


class Month:
    def __init__(self, base: str, keys: dict[str, str]) -> None:
        self.http = httpx.Client(base_url=base, timeout=30)
        self.keys = keys

    def h(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"}

    def now(self) -> dt.datetime:
        r = self.http.get("/v1/sim/events", params={"limit": 1}, headers=self.h("operator"))
        r.raise_for_status()
        return EPOCH + dt.timedelta(seconds=float(r.json()["now_s"]))

    def until(self, when: dt.datetime) -> dt.datetime:
        while (now := self.now()) < when:
            time.sleep(0.02)
        return now

    def wait(self, what: str, check: Any, timeout_s: float = 60) -> Any:
        deadline = time.monotonic() + timeout_s
        while not (got := check()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}")
            time.sleep(0.05)
        return got

    def ready(self, who: str, cid: str) -> None:
        url = f"/v1/clusters/{cid}"
        self.wait(f"{cid} Ready", lambda: self.http.get(url, headers=self.h(who)).json()["status"]["phase"] == "Ready")

    def cluster(self, who: str, name: str) -> str:
        body = {
            "name": name,
            "region": "us-east-1",
            "node_type": "hgx-h200-8g",
            "node_count": 4,
            "fabric": "infiniband-ndr",
            "scheduler": "slurm",
        }
        r = self.http.post("/v1/clusters", json=body, headers=self.h(who))
        r.raise_for_status()
        return str(r.json()["id"])

    def nodes(self, cid: str) -> list[dict[str, Any]]:
        r = self.http.get("/v1/nodes", params={"cluster_id": cid, "limit": 200}, headers=self.h("operator"))
        return list(r.json()["items"])

    def node(self, name: str) -> dict[str, Any]:
        return dict(self.http.get("/v1/nodes", params={"name": name}, headers=self.h("operator")).json()["items"][0])

    def fault(self, cid: str) -> tuple[str, dt.datetime, dt.datetime]:
        """A remap failure on the cluster's first node: (node, injected at, out of service at), simulated."""
        name = sorted(n["name"] for n in self.nodes(cid))[0]
        r = self.http.post(
            "/v1/sim/faults", json={"node": name, "kind": "remap_failure", "gpu": 1}, headers=self.h("operator")
        )
        r.raise_for_status()
        injected = EPOCH + dt.timedelta(seconds=float(r.json()["at_s"]))
        self.wait(f"{name} out", lambda: self.node(name)["fleet_stage"] in ("quarantined", "rma"))
        return name, injected, self.now()


def _smtp() -> tuple[Any, list[str]]:
    from aiosmtpd.controller import Controller

    got: list[str] = []

    class Inbox:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            got.extend(envelope.rcpt_tos)
            return "250 OK"

    controller = Controller(Inbox(), hostname="127.0.0.1", port=_free_port())
    controller.start()
    return controller, got


def _run(home: Path) -> None:
    smtp, pages = _smtp()
    port = _free_port()
    env = {**os.environ, "VELYRIX_HOME": str(home), "VELYRIX_SMTP_PORT": str(smtp.port), "VELYRIX_NOC_SWEEP_S": "30"}
    env.pop("VELYRIX_DATABASE_URL", None)
    keys = {t: _velyrix(env, "admin", "create-tenant", t) for t in ("acme", "bravo")}
    keys["operator"] = _velyrix(env, "admin", "create-provider-key", "noc")
    args = ["up", "--port", str(port), "--speed", str(SPEED), "--start", EPOCH.isoformat(), "--seed", "1"]
    args += ["--nodes", "hgx-h200-8g=10", "--agent-interval", "0.25"]
    log = (home / "up.log").open("w")
    up = subprocess.Popen([sys.executable, "-m", "velyrix.cli.main", *args], env=env, stdout=log, stderr=log)
    try:
        m = Month(f"http://127.0.0.1:{port}", keys)
        m.wait("velyrix up", lambda: _answers(m), 60)
        cids = {who: m.cluster(who, f"{who}-train") for who in ("acme", "bravo")}
        for who, cid in cids.items():
            m.ready(who, cid)
        sim_nov, wall_nov = m.until(NOV), time.perf_counter()
        out = []
        for who, when in (*FAULTS, SHORT):
            m.until(when)
            out.append((who, *m.fault(cids[who])))
        sim_dec = m.until(DEC + dt.timedelta(hours=1))
        # wall seconds per simulated second between the two readings, times 30 days
        wall_month = (time.perf_counter() - wall_nov) * 30 * 86400 / (sim_dec - sim_nov).total_seconds()
        t0 = time.perf_counter()
        r = m.http.post("/v1/billing-months", json={"month": "2026-11"}, headers=m.h("operator"))
        r.raise_for_status()
        close_s = time.perf_counter() - t0
        _report(m, cids, out, wall_month, sim_dec, close_s, pages)
    finally:
        up.send_signal(signal.SIGINT)
        try:
            up.wait(30)
        except subprocess.TimeoutExpired:
            up.kill()
        smtp.stop()
        log.close()


def _answers(m: Month) -> bool:
    try:
        return m.http.get("/healthz").status_code == 200
    except httpx.HTTPError:
        return False


def _report(
    m: Month, cids: dict[str, str], faults: list[Any], wall_s: float, sim_dec: Any, close_s: float, pages: list[str]
) -> None:
    print(
        f"30 simulated days (Nov 1 -> Dec 1) at --speed {SPEED:.0f}: {wall_s:.1f} s wall"
        f" (ideal {30 * 86400 / SPEED:.1f} s)"
    )
    for who, node, injected, out in faults:
        lag = (out - injected).total_seconds() / 60
        print(
            f"  {who}: remap failure on {node} injected {injected:%b %d %H:%M},"
            f" out of service {lag:.0f} simulated min later"
        )
    print(f"close of 2026-11 through the API: {close_s:.2f} s wall")
    for who in cids:
        tid = m.http.get("/v1/tenants", headers=m.h(who)).json()["items"][0]["id"]
        report = m.http.get(f"/v1/sla-reports/{tid}", params={"month": "2026-11"}, headers=m.h(who)).json()
        (c,) = report["clusters"]
        inv = m.http.get("/v1/invoices", headers=m.h(who)).json()["items"]
        notes = m.http.get("/v1/credit-notes", headers=m.h(who)).json()["items"]
        p1 = report["incidents"]["by_priority"]["P1"]["count"]
        credit = notes[0]["amount_usd"] if notes else "none"
        pct = c["credit_percent"]
        line = f"  {who}: availability {c['availability_percent']}% (credit {pct}%: {credit} USD),"
        print(line + f" invoice {inv[0]['total_usd']} USD, P1 incidents {p1}")
        keys = ("counted_minutes", "committed_node_minutes", "delivered_node_minutes", "degraded_node_minutes")
        print("    " + ", ".join(f"{k} {c[k]:,}" for k in keys))
        for run in c["evidence"]:
            if run["healthy_nodes"] < 4:
                print(f"    {run['from'][5:16]} -> {run['to'][5:16]}: {run['healthy_nodes']} of 4 nodes healthy")
        short = [r for r in c["evidence"] if r["healthy_nodes"] < 4]
        assert c["counted_minutes"] == 43200, c["counted_minutes"]  # the whole month in service
        # the evidence adds up, and every shortfall starts after a fault injected on that cluster
        lost = sum((4 - r["healthy_nodes"]) * r["minutes"] for r in c["evidence"])
        assert lost == c["committed_node_minutes"] - c["delivered_node_minutes"], (lost, c)
        starts = [f[2] for f in faults if f[0] == who]
        assert all(any(dt.datetime.fromisoformat(r["from"]) >= t for t in starts) for r in short), (short, starts)
        assert notes and Decimal(notes[0]["amount_usd"]) > 0 and p1 >= 1, (notes, p1)
        if who == "acme":  # short one node of 4 from the third fault to the month's end: no spare left
            assert short[-1]["to"].startswith("2026-12-01T00:00") and short[-1]["healthy_nodes"] == 3, short
    print(f"pages received by SMTP: {len(pages)} ({', '.join(sorted(set(pages)))})")
    assert len(pages) >= 3, pages
    print(f"(twin read at {sim_dec:%b %d %H:%M} when the month was closed)")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _run(Path(tmp))


if __name__ == "__main__":
    main()
