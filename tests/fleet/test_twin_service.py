"""One twin served over HTTP (``velyrix sim serve``): its client is a ``Driver`` like the in-process one, two
replicas submitting the same request id share one execution, and the service refuses strangers and bad input."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from velyrix import errors
from velyrix.fleet.drivers import base
from velyrix.fleet.drivers.sim import SimClock, SimDelays, SimDriver, SimRegion
from velyrix.fleet.drivers.sim.remote import TwinClient, TwinService

TOKEN = "t" * 32


@pytest.fixture()
def service() -> Iterator[TwinService]:
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 4}, seed=2, clock=SimClock(speed=None))
    svc = TwinService(SimDriver(region, SimDelays.off()), TOKEN)
    try:
        yield svc
    finally:
        svc.close()


def test_two_replicas_share_one_execution_per_request_id(service: TwinService) -> None:
    a, b = TwinClient(service.url, TOKEN, "replica-a"), TwinClient(service.url, TOKEN, "replica-b")
    node = sorted(a.list_nodes())[0]
    assert a.node_types()[node] == "hgx-h200-8g"
    net = base.NetworkAttachment(vlan=1234, vrf="acme", pkey=0x0101)
    first = a.attach_networks(node, net, request_id="c1/0/networks/n/0")
    again = b.attach_networks(node, net, request_id="c1/0/networks/n/0")  # the new holder resubmits
    assert first.status == again.status == base.SUCCEEDED and again.result == first.result
    assert b.operation("c1/0/networks/n/0").done
    (entry,) = [e for e in a.ledger() if e["request_id"] == "c1/0/networks/n/0"]
    assert entry["executions"] == 1 and entry["submitters"] == ["replica-a", "replica-b"]
    with pytest.raises(errors.RemoteError) as unknown:  # as the in-process driver: UnknownNameError's code
        a.power("no-such-node", True, request_id="x")
    assert unknown.value.code == "unknown_name" and unknown.value.http_status == 422
    for c in (a, b):
        c.close()


def test_strangers_and_bad_input_are_refused(service: TwinService) -> None:
    assert httpx.post(f"{service.url}/v1/driver/list_nodes", json={}).status_code == 401
    wrong = {"Authorization": "Bearer " + "x" * 32}
    assert httpx.get(f"{service.url}/v1/driver/ledger", headers=wrong).status_code == 401
    ok = {"Authorization": f"Bearer {TOKEN}"}
    bad = httpx.post(f"{service.url}/v1/driver/power", content=b"[1]", headers=ok)
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_input"
    missing = httpx.post(f"{service.url}/v1/driver/power", json={"node": "x"}, headers=ok)
    assert missing.status_code == 400
    big = httpx.post(f"{service.url}/v1/driver/list_nodes", content=b" " * (2 << 20), headers=ok)
    assert big.status_code == 400
    assert httpx.post(f"{service.url}/v1/driver/nope", json={}, headers=ok).status_code == 404
    with pytest.raises(errors.InvalidInputError):
        TwinService(service.driver, "short")
