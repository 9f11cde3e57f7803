"""Degraded GPUs counted as down when the contract says so (docs/sla.md, 'Degraded capacity', the worked
example): the same degraded interval, recorded by the remediation's ``degradation.track`` on the fleet's
clock, earns acme (default contract: degraded counts as down) a credit and bravo (its contract says it
does not) none; both reports show the degraded node-minutes."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from tests.controlplane.conftest import Recorder, auth
from tests.noc.test_scripted_month import at, deliver, move
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.fleet import states
from velyrix.health.ladder import Level
from velyrix.ops.remediation import degradation

NO_DEGRADED = 'contract "bravo-plain" {\n  degraded_counts_as_down = false\n}\n'


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from velyrix.ops.service import create_app

    application = create_app(f"sqlite:///{tmp_path_factory.mktemp('db') / 'degraded.db'}")
    yield Recorder(application)
    application.state.engine.dispose()


@pytest.fixture(scope="module")
def month(app: Any) -> dict[str, Any]:
    with app.state.sessionmaker() as s:
        a, b = models.Tenant(name="acme", display_name="Acme"), models.Tenant(name="bravo", display_name="Bravo")
        s.add_all([a, b])
        s.flush()
        out: dict[str, Any] = {"keys": {}, "bravo_id": b.id}
        for t in (a, b):
            cluster, nodes = deliver(s, t, f"{t.name}-train", "hgx-h200-8g", 2)
            # GPU 3 of node 0 reports a pending row remap from Nov 10 06:00:30 (its reset waits for the GPU
            # to be idle) until a report at Nov 12 06:00:00 finds it clean
            assert (
                degradation.track(
                    s,
                    nodes[0],
                    Level.DEGRADED,
                    "remap_pending:gpu3 row remap pending",
                    at(10, 6, 0) + dt.timedelta(seconds=30),
                )
                == "opened"
            )
            assert degradation.track(s, nodes[0], Level.DEGRADED, "still", at(11)) is None  # one interval
            assert degradation.track(s, nodes[0], Level.OK, "clean", at(12, 6)) == "closed"
            out[t.name] = cluster.id
            for role in ("owner", "billing"):
                out["keys"][(t.name, role)] = principals.issue_key(s, tenant_id=t.id, name=role, role=role)[1]
        out["keys"]["operator"] = principals.issue_key(s, tenant_id=None, name="noc", role="operator")[1]
        s.commit()
    return out


@pytest.fixture(scope="module")
def client(app: Any, month: dict[str, Any]) -> Any:
    from fastapi.testclient import TestClient

    with TestClient(app) as c:
        body = {"hcl": NO_DEGRADED}
        r = c.put(f"/v1/contracts/{month['bravo_id']}", json=body, headers=auth(month["keys"]["operator"]))
        assert r.status_code == 200, r.text
        r = c.post("/v1/billing-months", json={"month": "2026-11"}, headers=auth(month["keys"]["operator"]))
        assert r.status_code == 201, r.text
        yield c


def _report(client: Any, month: dict[str, Any], tenant: str) -> dict[str, Any]:
    tid = client.get("/v1/tenants", headers=auth(month["keys"][(tenant, "owner")])).json()["items"][0]["id"]
    r = client.get(
        f"/v1/sla-reports/{tid}", params={"month": "2026-11"}, headers=auth(month["keys"][(tenant, "owner")])
    )
    assert r.status_code == 200, r.text
    (cluster,) = r.json()["clusters"]
    return dict(cluster)


def test_degraded_minutes_are_down_on_the_default_contract(client: Any, month: dict[str, Any]) -> None:
    acme = _report(client, month, "acme")
    # 06:00:30 is inside minute 06:00, which is then down: 2 days = 2,880 node-minutes of 2 x 43,200
    assert acme["degraded_node_minutes"] == 2880 and acme["degraded_counts_as_down"] is True
    assert acme["delivered_node_minutes"] == 86400 - 2880
    assert acme["availability_percent"] == "96.666" and acme["credit_percent"] == "25"
    (note,) = client.get("/v1/credit-notes", headers=auth(month["keys"][("acme", "billing")])).json()["items"]
    # 25% of 2 nodes x 8 GPUs x 720 h x 3.50 USD = 25% of 40,320.00
    assert note["cluster_id"] == month["acme"] and Decimal(note["amount_usd"]) == Decimal("10080.00")


def test_degraded_minutes_are_up_when_the_contract_says_so(client: Any, month: dict[str, Any]) -> None:
    bravo = _report(client, month, "bravo")
    assert bravo["degraded_node_minutes"] == 2880 and bravo["degraded_counts_as_down"] is False
    assert bravo["delivered_node_minutes"] == 86400 and bravo["met"] is True
    assert client.get("/v1/credit-notes", headers=auth(month["keys"][("bravo", "billing")])).json()["items"] == []


def test_a_node_leaving_service_ends_its_degraded_interval(app: Any, month: dict[str, Any]) -> None:
    with app.state.sessionmaker() as s:
        node = s.query(models.Node).filter_by(cluster_id=month["acme"]).order_by(models.Node.name).all()[1]
        assert degradation.track(s, node, Level.DEGRADED, "nvme media errors", at(20)) == "opened"
        move(s, node, states.QUARANTINED, at(20, 1))
        assert degradation.track(s, node, Level.DEGRADED, "nvme media errors", at(20, 1)) == "closed"
        assert degradation.track(s, node, Level.FATAL, "worse", at(20, 2)) is None  # out of service: nothing
        s.rollback()
