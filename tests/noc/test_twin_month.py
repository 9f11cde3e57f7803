"""A month driven through the running twin (what ``velyrix up`` runs: uvicorn on loopback, the twin, the
reconcile thread, one agent per twin node reporting over HTTP), on the twin's clock.

The twin's clock starts on 2026-10-31 and moves only when the test advances it, so everything the loop does
between two advances is stamped at one simulated instant. Faults are injected into twin nodes through
``/v1/sim/faults``; the node agents report them, the server quarantines the node and replaces it when a
spare exists. The twin has no free node: each outage ends when the test deletes a "holder" cluster, whose
node goes back to the pool and becomes the replacement. A maintenance window is announced through the API
in time, another too late. Closing November through the API issues credit notes; the test computes the
expected availability and credits by hand from the recorded transitions (its own arithmetic, not
``ops.sla``) and from the times it chose, and both agree to the cent.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import httpx
import pytest
import uvicorn

from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import phases
from velyrix.controlplane.reconcile.runtime import FleetRuntime
from velyrix.ops import twin_agents
from velyrix.ops.service import create_app
from velyrix.testing.postgres import free_port

UTC = dt.UTC
EPOCH = dt.datetime(2026, 10, 31, tzinfo=UTC)
NOV, DEC = dt.datetime(2026, 11, 1, tzinfo=UTC), dt.datetime(2026, 12, 1, tzinfo=UTC)
MONTH_MIN = 43200
H200_USD_PER_GPU_H = Decimal("3.50")  # hgx-h200-8g list price in the catalog (tests/noc/test_scripted_month.py)


def at(day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, tzinfo=UTC)


def until(what: str, check: Callable[[], Any], timeout_s: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Twin:
    """The running system on a hand-moved twin clock."""

    def __init__(self, db_url: str, nodes: int) -> None:
        self.app = create_app(db_url)
        self.runtime = FleetRuntime.twin(
            self.app.state.sessionmaker,
            "us-east-1",
            node_counts={"hgx-h200-8g": nodes},
            seed=5,
            delays=False,
            settings=phases.ReconcileSettings(poll_s=0.01, idle_s=0.05),
            epoch_s=EPOCH.timestamp(),
        )
        self.runtime.attach(self.app)
        self.keys: dict[str, str] = {}
        with self.app.state.sessionmaker() as s:
            for name in ("acme", "bravo", "holder"):
                t = models.Tenant(name=name, display_name=name.title())
                s.add(t)
                s.flush()
                self.keys[name] = principals.issue_key(s, tenant_id=t.id, name=name, role="owner")[1]
            self.keys["operator"] = principals.issue_key(s, tenant_id=None, name="noc", role="operator")[1]
            s.commit()
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        until("uvicorn", lambda: self.server.started)
        self.runtime.start()
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=20)
        assert self.runtime.sim is not None
        self.agents = twin_agents.TwinAgents(
            self.app.state.sessionmaker, self.runtime.sim, f"http://127.0.0.1:{self.port}", interval_s=0.2
        )
        self.agents.start()

    def stop(self) -> None:
        self.agents.stop()
        self.http.close()
        self.runtime.stop()
        self.server.should_exit = True
        self.thread.join(5)
        self.app.state.engine.dispose()

    def h(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"}

    def to(self, when: dt.datetime) -> None:
        """Move the twin's clock forward to ``when``."""
        assert self.runtime.sim is not None
        now = EPOCH + dt.timedelta(seconds=self.runtime.sim.clock.now())
        assert when >= now, (when, now)
        self.runtime.sim.advance((when - now).total_seconds())

    def cluster(self, who: str, name: str, count: int) -> str:
        body = {
            "name": name,
            "region": "us-east-1",
            "node_type": "hgx-h200-8g",
            "node_count": count,
            "fabric": "infiniband-ndr",
            "scheduler": "slurm",
        }
        r = self.http.post("/v1/clusters", headers=self.h(who), json=body)
        assert r.status_code in (201, 202), r.text
        cid = str(r.json()["id"])
        self.wait_ready(who, cid, count)
        return cid

    def members(self, cid: str) -> list[dict[str, Any]]:
        r = self.http.get("/v1/nodes", params={"cluster_id": cid, "limit": 200}, headers=self.h("operator"))
        return list(r.json()["items"])

    def wait_ready(self, who: str, cid: str, count: int, without: str | None = None) -> None:
        last: list[Any] = []

        def ready() -> bool:
            c = self.http.get(f"/v1/clusters/{cid}", headers=self.h(who)).json()
            names = {n["name"] for n in self.members(cid)}
            last[:] = [c["status"], names]
            return c["status"]["phase"] == "Ready" and len(names) == count and without not in names

        try:
            until(f"cluster {cid} Ready at {count}", ready)
        except AssertionError as e:
            raise AssertionError(f"{e}: {last[1:]} {last[0]['phase']}") from None

    def fault(self, hostname: str) -> None:
        """A GPU row-remap failure on ``hostname`` (an RMA criterion: the node does not come back this month)."""
        r = self.http.post(
            "/v1/sim/faults", headers=self.h("operator"), json={"node": hostname, "kind": "remap_failure", "gpu": 1}
        )
        assert r.status_code == 202, r.text
        until(f"{hostname} out of service", lambda: self.node(hostname)["fleet_stage"] in ("quarantined", "rma"))
        # and released from its cluster before the clock moves on (the release ends the billed allocation)
        until(f"{hostname} released", lambda: self.node(hostname)["provisioning_state"] == "available")

    def node(self, hostname: str) -> dict[str, Any]:
        r = self.http.get("/v1/nodes", params={"name": hostname}, headers=self.h("operator"))
        return dict(r.json()["items"][0])

    def release(self, cid: str) -> None:
        """Delete a holder cluster: its node goes back to the pool (and becomes a replacement)."""
        r = self.http.delete(f"/v1/clusters/{cid}", headers=self.h("holder"))
        assert r.status_code in (200, 202), r.text


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("home")
    mp = pytest.MonkeyPatch()
    mp.setenv("VELYRIX_HOME", str(home))
    twin = Twin(f"sqlite:///{home / 'velyrix.db'}", nodes=6)  # 2 + 1 + 1 in service, 1 held, 1 spare
    try:
        x = twin.cluster("acme", "x-meets", 2)
        y = twin.cluster("acme", "y-misses-999", 1)
        z = twin.cluster("bravo", "z-misses-95", 1)
        hold = twin.cluster("holder", "hold", 1)
        # before the month the holder's node fails and takes the region's spare: from now on none is free
        twin.to(EPOCH + dt.timedelta(hours=12))
        (hn,) = [n["name"] for n in twin.members(hold)]
        twin.fault(hn)
        twin.wait_ready("holder", hold, 1, without=hn)
        twin.to(NOV)
        # x: a window announced now (11 days ahead, notice is 5): excluded
        r = twin.http.post(
            "/v1/maintenance-windows",
            headers=twin.h("operator"),
            json={"cluster_id": x, "starts_at": at(12, 2).isoformat(), "ends_at": at(12, 5).isoformat()},
        )
        assert r.status_code == 201 and r.json()["announced_at"].startswith("2026-11-01"), r.text
        # z: its only node fails on Nov 3 00:00; no spare: down to the end of the month
        twin.to(at(3))
        (zn,) = [n["name"] for n in twin.members(z)]
        twin.fault(zn)
        # y: a window announced on Nov 28 for Nov 30 20:00-24:00 (too late): counted; the node fails at 20:00
        twin.to(at(28))
        r = twin.http.post(
            "/v1/maintenance-windows",
            headers=twin.h("operator"),
            json={"cluster_id": y, "starts_at": at(30, 20).isoformat(), "ends_at": DEC.isoformat()},
        )
        assert r.status_code == 201, r.text
        twin.to(at(30, 20))
        (yn,) = [n["name"] for n in twin.members(y)]
        twin.fault(yn)
        twin.to(DEC)
        r = twin.http.post("/v1/billing-months", json={"month": "2026-11"}, headers=twin.h("operator"))
        assert r.status_code == 201, r.text
        yield {"twin": twin, "x": x, "y": y, "z": z, "failed": {z: zn, y: yn}}
    finally:
        twin.stop()
        mp.undo()


def test_transitions_and_incidents_carry_the_twins_clock(month: dict[str, Any]) -> None:
    twin: Twin = month["twin"]
    z, zn = month["z"], month["failed"][month["z"]]
    with twin.app.state.sessionmaker() as s:
        node = s.query(models.Node).filter_by(name=zn).one()
        moves = {
            t.to_state: t.at.replace(tzinfo=UTC) for t in s.query(models.NodeTransition).filter_by(node_id=node.id)
        }
    assert moves["quarantined"] == at(3)  # simulated Nov 3, not the wall clock
    r = twin.http.get("/v1/incidents", headers=twin.h("bravo"))
    assert r.status_code == 200, r.text
    opened = [i["opened_at"] for i in r.json()["items"] if i.get("cluster_id") == z]
    assert opened and all(o.startswith("2026-11-03T00:00") for o in opened), opened


def test_credits_equal_the_hand_computation_from_the_recorded_history(month: dict[str, Any]) -> None:
    twin: Twin = month["twin"]
    # the recorded history: when each failed node was quarantined (its cluster had no spare to take)
    with twin.app.state.sessionmaker() as s:
        down_from = {}
        for cid, failed in month["failed"].items():
            node = s.query(models.Node).filter_by(name=failed).one()
            moves = s.query(models.NodeTransition).filter_by(node_id=node.id, to_state="quarantined").all()
            (q,) = [m for m in moves if m.at.replace(tzinfo=UTC) >= NOV]
            down_from[cid] = q.at.replace(tzinfo=UTC)
            assert s.query(models.Node).filter_by(cluster_id=cid).count() == 0  # never replaced
    # ... equal to the times the test chose
    assert down_from == {month["z"]: at(3), month["y"]: at(30, 20)}
    expected = {}
    for cid, since in down_from.items():
        up_min = int((since - NOV).total_seconds() // 60)
        pct = Decimal(up_min) * 100 / MONTH_MIN
        tier = Decimal(100) if pct < 95 else Decimal(25) if pct < 99 else Decimal(10) if pct < Decimal("99.9") else 0
        charge = 8 * Decimal(up_min) / 60 * H200_USD_PER_GPU_H  # billed while the node was held
        expected[cid] = (charge * tier / 100).quantize(Decimal("0.01"), ROUND_HALF_UP)
    # y: 42,960 / 43,200 min = 99.444% -> 10% of 8 x 716 h x 3.50 = 20,048.00; z: 2,880 min = 6.667% -> 100%
    # of 8 x 48 h x 3.50 = 1,344.00
    assert expected == {month["y"]: Decimal("2004.80"), month["z"]: Decimal("1344.00")}
    got = {}
    for who in ("acme", "bravo"):
        for note in twin.http.get("/v1/credit-notes", headers=twin.h(who)).json()["items"]:
            got[note["cluster_id"]] = Decimal(note["amount_usd"])
            minutes = note["evidence"]["availability"]["delivered_node_minutes"]
            assert minutes == int((down_from[note["cluster_id"]] - NOV).total_seconds() // 60)
    assert got == expected  # x met its target: no credit


def test_report_shows_the_announced_window_excluded_and_the_late_one_counted(month: dict[str, Any]) -> None:
    twin: Twin = month["twin"]
    with twin.app.state.sessionmaker() as s:
        tid = s.query(models.Tenant).filter_by(name="acme").one().id
    r = twin.http.get(f"/v1/sla-reports/{tid}", params={"month": "2026-11"}, headers=twin.h("acme"))
    assert r.status_code == 200, r.text
    by = {c["cluster_id"]: c for c in r.json()["clusters"]}
    assert by[month["x"]]["met"] is True and by[month["x"]]["committed_node_minutes"] == 2 * (MONTH_MIN - 180)
    assert by[month["y"]]["availability_percent"] == "99.444" and by[month["y"]]["met"] is False
    assert by[month["y"]]["committed_node_minutes"] == MONTH_MIN  # the late window is not excluded


def test_a_backdated_announcement_is_refused(month: dict[str, Any]) -> None:
    twin: Twin = month["twin"]
    body = {
        "cluster_id": month["x"],
        "starts_at": "2026-12-02T00:00:00Z",
        "ends_at": "2026-12-02T01:00:00Z",
        "announced_at": "2026-10-01T00:00:00Z",
    }
    r = twin.http.post("/v1/maintenance-windows", headers=twin.h("operator"), json=body)
    assert r.status_code == 422, r.text


def test_december_carries_the_credits_with_no_call_but_the_close_and_its_pdf_opens(
    month: dict[str, Any], tmp_path: Any
) -> None:
    """Runs last: moves the twin to January and closes December (the only call)."""
    import subprocess

    twin: Twin = month["twin"]
    twin.to(dt.datetime(2027, 1, 1, tzinfo=UTC))
    r = twin.http.post("/v1/billing-months", json={"month": "2026-12"}, headers=twin.h("operator"))
    assert r.status_code == 201, r.text
    acme = {i["month"]: i for i in twin.http.get("/v1/invoices", headers=twin.h("acme")).json()["items"]}["2026-12"]
    # x keeps its 2 nodes all December: 2 x 8 GPUs x 744 h x 3.50; y and z hold no node (never replaced)
    assert Decimal(acme["subtotal_usd"]) == 2 * 8 * 744 * H200_USD_PER_GPU_H == Decimal("41664.00")
    assert [c["amount_usd"] for c in acme["credits"]] == ["2004.80"]
    assert Decimal(acme["total_usd"]) == Decimal("39659.20")
    bravo = {i["month"]: i for i in twin.http.get("/v1/invoices", headers=twin.h("bravo")).json()["items"]}["2026-12"]
    assert Decimal(bravo["subtotal_usd"]) == 0 and Decimal(bravo["total_usd"]) == 0
    (note,) = twin.http.get("/v1/credit-notes", headers=twin.h("bravo")).json()["items"]
    assert note["remaining_usd"] == "1344.00"  # nothing to apply it to yet: carried
    pdf = twin.http.get(f"/v1/invoices/{acme['id']}", params={"format": "pdf"}, headers=twin.h("acme"))
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")
    (tmp_path / "dec.pdf").write_bytes(pdf.content)
    subprocess.run(["pdftoppm", "-png", "-r", "50", str(tmp_path / "dec.pdf"), str(tmp_path / "p")], check=True)
    assert (tmp_path / "p-1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
