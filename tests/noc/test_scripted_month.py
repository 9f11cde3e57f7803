"""A scripted month: two tenants, three clusters, a state history written through the fleet's
``transition()`` at chosen (simulated) times, one announced and one unannounced maintenance window.
Closing November issues invoices and SLA credit notes equal to the hand-computed answer to the cent;
closing December (the only call) applies them, carrying the balance a credit could not use."""

from __future__ import annotations

import datetime as dt
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.conftest import Recorder, auth
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import noc as models_noc
from velyrix.controlplane.reconcile.store import DbTransitionStore
from velyrix.fleet import states, transitions

UTC = dt.UTC
NOV = dt.datetime(2026, 11, 1, tzinfo=UTC)


def at(day: int, hour: int = 0, minute: int = 0, month: int = 11) -> dt.datetime:
    return dt.datetime(2026, month, day, hour, minute, tzinfo=UTC)


def move(s: Any, node: models.Node, to: str, when: dt.datetime) -> None:
    transitions.transition(
        node, to, actor="test", reason="scripted month", store=DbTransitionStore(s), now_s=when.timestamp()
    )


def deliver(
    s: Any, tenant: models.Tenant, name: str, node_type: str, count: int
) -> tuple[models.Cluster, list[models.Node]]:
    """A cluster of ``count`` nodes delivered on 2026-10-20 (before the month) through the real table."""
    cluster = models.Cluster(
        tenant_id=tenant.id, name=name, region="us-east-1", node_type=node_type, node_count=count, spec={}, plan={}
    )
    s.add(cluster)
    s.flush()
    nodes = []
    for i in range(count):
        node = models.Node(name=f"{name}-n{i}", region="us-east-1", node_type=node_type)
        s.add(node)
        s.flush()
        t0 = dt.datetime(2026, 10, 20, tzinfo=UTC)
        for state in (states.INSPECTING, states.AVAILABLE, states.PRODUCTION):
            move(s, node, state, t0)
        node.cluster_id, node.tenant_id = cluster.id, tenant.id
        for state in (states.ALLOCATED, states.PROVISIONING, states.ACTIVE):
            move(s, node, state, t0)
        nodes.append(node)
    return cluster, nodes


def down(s: Any, node: models.Node, start: dt.datetime, end: dt.datetime) -> None:
    move(s, node, states.QUARANTINED, start)
    move(s, node, states.PRODUCTION, end)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from velyrix.ops.service import create_app

    application = create_app(f"sqlite:///{tmp_path_factory.mktemp('db') / 'month.db'}")
    yield Recorder(application)
    application.state.engine.dispose()


@pytest.fixture(scope="module")
def month(app: Any) -> dict[str, Any]:
    """The scripted state history; returns ids and keys."""
    from velyrix.ops.noc import incidents

    with app.state.sessionmaker() as s:
        a = models.Tenant(name="acme", display_name="Acme")
        b = models.Tenant(name="bravo", display_name="Bravo")
        s.add_all([a, b])
        s.flush()
        x, xn = deliver(s, a, "x-meets", "hgx-h200-8g", 4)
        y, yn = deliver(s, a, "y-misses-999", "hgx-h100-8g", 2)
        z, zn = deliver(s, b, "z-misses-95", "hgx-b200-8g", 2)
        # x: an announced window (10 days ahead) with two nodes down for 3 h: excluded; 100 min down outside
        s.add(
            models_noc.MaintenanceWindow(
                tenant_id=a.id,
                cluster_id=x.id,
                starts_at=at(12, 2),
                ends_at=at(12, 5),
                announced_at=at(2),
                label="switch firmware",
            )
        )
        down(s, xn[0], at(12, 2), at(12, 5))
        down(s, xn[1], at(12, 2), at(12, 5))
        down(s, xn[2], at(20, 10), at(20, 11, 40))
        # y: a window announced one day ahead (notice is 5 days): counted; both nodes down for 4 h
        s.add(
            models_noc.MaintenanceWindow(
                tenant_id=a.id,
                cluster_id=y.id,
                starts_at=at(8, 0),
                ends_at=at(8, 4),
                announced_at=at(7),
                label="late notice",
            )
        )
        down(s, yn[0], at(8, 0), at(8, 4))
        down(s, yn[1], at(8, 0), at(8, 4))
        # z: one node down four days
        down(s, zn[0], at(3), at(7))
        inc, _ = incidents.open_incident(
            s,
            key="capacity:z",
            priority="P1",
            title="z lost a node",
            tenant_id=b.id,
            cluster_id=z.id,
            source="control-plane",
            at=at(3),
        )
        incidents.act(s, inc, "ack", actor="noc-alice", text="on it", at=at(3, 0, 10))
        incidents.act(s, inc, "resolve", actor="noc-alice", text="node back", at=at(7))
        # a volume of tenant a from Nov 16: half of November at 100 TB
        s.add(
            models_noc.VolumeSegment(
                volume_id="vol_acme1", tenant_id=a.id, tier="parallel_fs", size_tb="100", starts_at=at(16), ends_at=None
            )
        )
        # z is deleted by its tenant on December 10 (desired absent, its nodes released)
        z.desired_state = "absent"
        for n in zn:
            move(s, n, states.DEPROVISIONING, at(10, month=12))
        keys = {}
        for t in (a, b):
            for role in ("owner", "billing", "viewer"):
                keys[(t.name, role)] = principals.issue_key(s, tenant_id=t.id, name=f"{t.name}-{role}", role=role)[1]
        keys["operator"] = principals.issue_key(s, tenant_id=None, name="noc", role="operator")[1]
        s.commit()
        return {"a": a.id, "b": b.id, "x": x.id, "y": y.id, "z": z.id, "keys": keys}


@pytest.fixture(scope="module")
def client(app: Any, month: dict[str, Any]) -> Any:
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        for m in ("2026-11", "2026-12"):
            r = c.post("/v1/billing-months", json={"month": m}, headers=auth(month["keys"]["operator"]))
            assert r.status_code == 201, r.text
        yield c


def invoices(client: Any, key: str) -> dict[str, dict[str, Any]]:
    r = client.get("/v1/invoices", headers=auth(key))
    assert r.status_code == 200, r.text
    return {i["month"]: i for i in r.json()["items"]}


def test_november_invoices_are_the_hand_computed_sums_of_their_lines(client: Any, month: dict[str, Any]) -> None:
    acme = invoices(client, month["keys"][("acme", "billing")])["2026-11"]
    # x: 4 nodes x 8 GPUs x 720 h x 3.50; y: 2 x 8 x 720 x 2.85; storage: 100 TB x 15/30 month x 42
    amounts = sorted(Decimal(ln["amount_usd"]) for ln in acme["lines"])
    assert amounts == [Decimal("2100.00"), Decimal("32832.00"), Decimal("80640.00")]
    assert Decimal(acme["subtotal_usd"]) == sum(amounts) == Decimal("115572.00")
    assert acme["credits"] == [] and Decimal(acme["total_usd"]) == Decimal("115572.00")
    bravo = invoices(client, month["keys"][("bravo", "owner")])["2026-11"]
    assert Decimal(bravo["total_usd"]) == Decimal("60480.00")  # 2 x 8 x 720 x 5.25


def test_credit_notes_equal_the_hand_computed_availability_and_credit(client: Any, month: dict[str, Any]) -> None:
    acme = client.get("/v1/credit-notes", headers=auth(month["keys"][("acme", "owner")])).json()["items"]
    assert [c["cluster_id"] for c in acme] == [month["y"]]  # x met its target
    (y,) = acme
    # y: 2 nodes, 43,200 min, the late window counted: 86,400 - 2 x 240 = 85,920 node-min = 99.444%
    assert y["evidence"]["availability"]["delivered_node_minutes"] == 85920
    assert Decimal(y["evidence"]["availability_percent_exact"]) == Decimal(85920 * 100) / Decimal(86400)
    assert y["evidence"]["credit_percent"] == "10" and y["amount_usd"] == "3283.20"
    windows = y["evidence"]["availability"]["maintenance_windows"]
    assert [w["excluded"] for w in windows] == [False]
    bravo = client.get("/v1/credit-notes", headers=auth(month["keys"][("bravo", "owner")])).json()["items"]
    (z,) = bravo
    # z: one node down 4 days = 5,760 node-min of 86,400: 93.333% < 95% -> 100% of 60,480.00
    assert z["evidence"]["availability"]["delivered_node_minutes"] == 80640
    assert z["evidence"]["credit_percent"] == "100" and z["amount_usd"] == "60480.00"
    assert [i["priority"] for i in z["evidence"]["incidents"]] == ["P1"]


def test_december_invoices_carry_the_credits_and_the_balance(client: Any, month: dict[str, Any]) -> None:
    acme = invoices(client, month["keys"][("acme", "billing")])["2026-12"]
    # x: 4 x 8 x 744 x 3.50 = 83,328.00; y: 2 x 8 x 744 x 2.85 = 33,926.40; storage 100 x 42 = 4,200.00
    assert Decimal(acme["subtotal_usd"]) == Decimal("121454.40")
    assert [c["amount_usd"] for c in acme["credits"]] == ["3283.20"]
    assert Decimal(acme["total_usd"]) == Decimal("118171.20")
    bravo = invoices(client, month["keys"][("bravo", "owner")])["2026-12"]
    # z released Dec 10: 2 x 8 x 216 h x 5.25 = 18,144.00, all of it credited; 42,336.00 carried
    assert Decimal(bravo["subtotal_usd"]) == Decimal("18144.00") and Decimal(bravo["total_usd"]) == 0
    (note,) = client.get("/v1/credit-notes", headers=auth(month["keys"][("bravo", "owner")])).json()["items"]
    assert note["state"] == "partially_applied" and note["remaining_usd"] == "42336.00"


def test_report_availability_matches_the_hand_computation(client: Any, month: dict[str, Any]) -> None:
    r = client.get(
        f"/v1/sla-reports/{month['a']}", params={"month": "2026-11"}, headers=auth(month["keys"][("acme", "owner")])
    )
    assert r.status_code == 200, r.text
    by = {c["cluster_id"]: c for c in r.json()["clusters"]}
    # x: the announced 180 min are excluded: 4 x 43,020 committed, 100 min of one node down
    assert by[month["x"]]["committed_node_minutes"] == 4 * 43020
    assert by[month["x"]]["delivered_node_minutes"] == 4 * 43020 - 100
    assert by[month["x"]]["availability_percent"] == "99.941" and by[month["x"]]["met"] is True
    assert by[month["y"]]["availability_percent"] == "99.444" and by[month["y"]]["met"] is False
    runs = by[month["y"]]["evidence"]
    assert sum(run["minutes"] for run in runs) == 43200
    assert [run["healthy_nodes"] for run in runs] == [2, 0, 2]
    bravo = client.get(
        f"/v1/sla-reports/{month['b']}", params={"month": "2026-11"}, headers=auth(month["keys"][("bravo", "owner")])
    ).json()
    p1 = bravo["incidents"]["p1_first_response"]
    assert p1["p50_minutes"] == 10.0 and p1["within_target_percent"] == 100.0


def test_the_pdf_opens(client: Any, month: dict[str, Any], tmp_path: Path) -> None:
    key = month["keys"][("acme", "owner")]
    inv = invoices(client, key)["2026-12"]
    for url, params in (
        (f"/v1/invoices/{inv['id']}", {"format": "pdf"}),
        (f"/v1/sla-reports/{month['a']}", {"month": "2026-11", "format": "pdf"}),
    ):
        r = client.get(url, params=params, headers=auth(key))
        assert r.status_code == 200 and r.headers["content-type"] == "application/pdf"
        pdf = tmp_path / "doc.pdf"
        pdf.write_bytes(r.content)
        subprocess.run(["pdftoppm", "-png", "-r", "50", str(pdf), str(tmp_path / "page")], check=True, timeout=60)
        page = tmp_path / "page-1.png"
        assert page.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and page.stat().st_size > 1000
        page.unlink()


def test_viewers_and_other_tenants_see_no_invoices(client: Any, month: dict[str, Any]) -> None:
    assert client.get("/v1/invoices", headers=auth(month["keys"][("acme", "viewer")])).status_code == 403
    bravo = invoices(client, month["keys"][("bravo", "owner")])
    acme_inv = invoices(client, month["keys"][("acme", "owner")])["2026-11"]
    assert month["a"] not in str(bravo)
    r = client.get(f"/v1/invoices/{acme_inv['id']}", headers=auth(month["keys"][("bravo", "owner")]))
    assert r.status_code == 404
    r = client.get(
        f"/v1/sla-reports/{month['a']}", params={"month": "2026-11"}, headers=auth(month["keys"][("bravo", "owner")])
    )
    assert r.status_code == 404


def test_closing_a_month_twice_is_refused_and_meters_replay_from_events(
    client: Any, app: Any, month: dict[str, Any]
) -> None:
    from velyrix.ops.billing import ledger, meters

    r = client.post("/v1/billing-months", json={"month": "2026-11"}, headers=auth(month["keys"]["operator"]))
    assert r.status_code == 409 and r.json()["code"] == "month_closed"
    with app.state.sessionmaker() as s:
        assert ledger.ingest(s, ledger.usage_events(s, "2026-11")) == 0  # idempotent: nothing new
        again = meters.aggregate(ledger.usage_events(s, "2026-11"))
        assert again == meters.aggregate(ledger.stored_events(s, "2026-11"))


def test_every_invoice_and_credit_note_change_left_one_audit_event(
    client: Any, app: Any, month: dict[str, Any]
) -> None:
    from collections import Counter

    with app.state.sessionmaker() as s:
        events = (
            s.query(models.AuditEvent)
            .filter(models.AuditEvent.action.in_(["invoices.issue", "credit_notes.issue", "credit_notes.apply"]))
            .all()
        )
        invoices_n = s.query(models_noc.Invoice).count()
        notes = s.query(models_noc.CreditNote).all()
    by = Counter(e.action for e in events)
    assert by["invoices.issue"] == invoices_n == 4
    assert by["credit_notes.issue"] == len(notes) == 2
    assert by["credit_notes.apply"] == sum(len(n.applications) for n in notes) == 2
    targets = Counter(e.target for e in events if e.action == "invoices.issue")
    assert set(targets.values()) == {1}
