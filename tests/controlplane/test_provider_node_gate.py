"""Provider actions on a self-operated cluster's nodes beyond SSH: a provider operator's node change
(PATCH /v1/nodes/{id}) is refused without the tenant's approval, goes ahead with one (once) or with a
break-glass (audited in the tenant's log, a Warning on its cluster); a managed cluster's node is the
provider's to change. The server's own health quarantine of a failing node stays allowed and is told
to the tenant (``controlplane/access/provider_actions.py``)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from tests.controlplane.conftest import World, auth
from tests.controlplane.test_access_gate import events, self_operated
from tests.controlplane.test_node_reports import HEALTHY, register, report
from velyrix.controlplane.db import models


def _labels(client: Any, world: World, node_id: str) -> dict[str, str]:
    got = client.get(f"/v1/nodes/{node_id}", headers=auth(world.provider["operator"]))
    return got.json()["labels"]  # type: ignore[no-any-return]


def _cluster_events(client: Any, world: World, cluster_id: str) -> list[dict[str, Any]]:
    got = client.get(f"/v1/clusters/{cluster_id}", headers=auth(world.a.keys["viewer"]))
    assert got.status_code == 200, got.text
    return got.json()["status"]["events"]  # type: ignore[no-any-return]


def test_provider_node_change_on_a_self_operated_node_needs_approval_or_break_glass(client: Any, world: World) -> None:
    cluster_id, node_id = self_operated(client, world)
    op = auth(world.provider["operator"])
    path = f"/v1/nodes/{node_id}"
    refused = client.patch(path, json={"labels": {"rack": "r9"}}, headers=op)
    assert refused.status_code == 403 and refused.json()["code"] == "access_approval_required", refused.text
    assert _labels(client, world, node_id) == {}
    assert [e.detail["action"] for e in events(world, "access.provider.refuse", cluster_id)] == ["labels"]

    wrong = client.post(
        f"/v1/clusters/{cluster_id}/access-approvals", json={"action": "ssh"}, headers=auth(world.a.keys["owner"])
    ).json()["id"]
    assert client.patch(path, json={"labels": {"rack": "r9"}, "approval_id": wrong}, headers=op).status_code == 403
    approval = client.post(
        f"/v1/clusters/{cluster_id}/access-approvals", json={"action": "labels"}, headers=auth(world.a.keys["owner"])
    ).json()["id"]
    ok = client.patch(path, json={"labels": {"rack": "r9"}, "approval_id": approval}, headers=op)
    assert ok.status_code == 200 and ok.json()["labels"] == {"rack": "r9"}, ok.text
    again = client.patch(path, json={"labels": {"rack": "r10"}, "approval_id": approval}, headers=op)
    assert again.status_code == 403 and _labels(client, world, node_id) == {"rack": "r9"}

    reason = "rack r9 is being moved tonight, tenant unreachable for two hours"
    glass = client.patch(path, json={"labels": {"rack": "r10"}, "break_glass_reason": reason}, headers=op)
    assert glass.status_code == 200 and glass.json()["labels"] == {"rack": "r10"}, glass.text
    (event,) = events(world, "access.break_glass", f"nodes/{node_id}")
    assert event.tenant_id == world.a.tenant_id and event.detail["reason"] == reason
    assert event.detail["action"] == "labels" and event.detail["via"] == "break_glass"
    # the tenant is told: its own audit log and its cluster's events name the break-glass and the reason
    mine = client.get("/v1/audit-events", params={"action": "access.break_glass"}, headers=auth(world.a.keys["owner"]))
    assert [e["target"] for e in mine.json()["items"]] == [f"nodes/{node_id}"]
    (warning,) = [e for e in _cluster_events(client, world, cluster_id) if e["reason"] == "ProviderBreakGlass"]
    assert reason in warning["message"] and warning["type"] == "Warning"


def test_a_managed_clusters_node_is_the_providers_to_change(client: Any, world: World) -> None:
    node_id = world.node(world.a, world.cluster(world.a))
    ok = client.patch(f"/v1/nodes/{node_id}", json={"labels": {"rack": "r1"}}, headers=auth(world.provider["operator"]))
    assert ok.status_code == 200 and ok.json()["labels"] == {"rack": "r1"}, ok.text


def test_the_servers_health_quarantine_of_a_self_operated_node_is_allowed_and_told_to_the_tenant(
    client: Any, world: World
) -> None:
    cluster_id, _ = self_operated(client, world)
    node = register(client, world)
    with world.session() as s:  # a production node of the tenant's self-operated cluster
        row = s.get(models.Node, node["id"])
        row.fleet_stage, row.provisioning_state = "production", "allocated"
        row.tenant_id, row.cluster_id, row.hardware = world.a.tenant_id, cluster_id, {"serial": "SN-78"}
        s.commit()
    body = report(node["name"], HEALTHY, xids=[(3, 990.0, 64)])
    resp = client.post(f"/v1/nodes/{node['name']}/reports", json=body, headers=auth(node["node_token"]))
    assert resp.status_code == 200, resp.text
    assert f"quarantine {node['name']}" in resp.json()["actions"]
    with world.session() as s:
        assert s.get(models.Node, node["id"]).fleet_stage in ("quarantined", "rma")
        (event,) = s.scalars(
            sa.select(models.AuditEvent).where(models.AuditEvent.action == "access.provider.automatic")
        ).all()
    assert event.tenant_id == world.a.tenant_id and event.target == node["id"]
    assert f"quarantine {node['name']}" in event.detail["actions"] and "xid:64" in event.detail["why"]
    assert event.actor.endswith("(health/control-plane)")
    mine = client.get(
        "/v1/audit-events", params={"action": "access.provider.automatic"}, headers=auth(world.a.keys["owner"])
    )
    assert [e["target"] for e in mine.json()["items"]] == [node["id"]]
    (warning,) = [e for e in _cluster_events(client, world, cluster_id) if e["reason"] == "ProviderHealthAction"]
    assert node["name"] in warning["message"] and "quarantine" in warning["message"]


def test_a_provider_drain_of_a_self_operated_node_needs_approval_or_break_glass(client: Any, world: World) -> None:
    cluster_id, node_id = self_operated(client, world)
    op = auth(world.provider["operator"])
    path = f"/v1/nodes/{node_id}/actions"
    refused = client.post(path, json={"action": "drain", "reason": "fabric work"}, headers=op)
    assert refused.status_code == 403 and refused.json()["code"] == "access_approval_required", refused.text
    assert not [e for e in _cluster_events(client, world, cluster_id) if e["reason"] == "ProviderDrain"]
    approval = client.post(
        f"/v1/clusters/{cluster_id}/access-approvals", json={"action": "drain"}, headers=auth(world.a.keys["owner"])
    ).json()["id"]
    ok = client.post(path, json={"action": "drain", "reason": "fabric work", "approval_id": approval}, headers=op)
    assert ok.status_code == 200 and ok.json()["via"] == "approval", ok.text
    (drain,) = [e for e in _cluster_events(client, world, cluster_id) if e["reason"] == "ProviderDrain"]
    assert "fabric work" in drain["message"]
    reason = "leaf switch replaced tonight, tenant paged with no answer"
    glass = client.post(path, json={"action": "drain", "reason": "leaf", "break_glass_reason": reason}, headers=op)
    assert glass.status_code == 200 and glass.json()["via"] == "break_glass" and glass.json()["incident"], glass.text
    (event,) = events(world, "access.break_glass", f"nodes/{node_id}/actions")
    assert event.tenant_id == world.a.tenant_id and event.detail["break_glass_reason"] == reason
    listed = client.get("/v1/incidents", headers=auth(world.a.keys["viewer"]), params={"cluster_id": cluster_id})
    assert glass.json()["incident"] in [i["number"] for i in listed.json()["items"]]
    # a reboot passes the gate with its own approval only; without a fleet driver it is a clear 409
    reboot = client.post(path, json={"action": "reboot", "reason": "x", "approval_id": approval}, headers=op)
    assert reboot.status_code == 403


def test_a_reboot_without_a_fleet_is_a_409_and_a_managed_node_drains_without_approval(
    client: Any, world: World
) -> None:
    node_id = world.node(world.a, world.cluster(world.a))
    op = auth(world.provider["operator"])
    drained = client.post(f"/v1/nodes/{node_id}/actions", json={"action": "drain", "reason": "r"}, headers=op)
    assert drained.status_code == 200 and drained.json()["via"] == "provider", drained.text
    reboot = client.post(f"/v1/nodes/{node_id}/actions", json={"action": "reboot", "reason": "r"}, headers=op)
    assert reboot.status_code == 409 and "no fleet" in reboot.json()["detail"], reboot.text
    tenant = client.post(
        f"/v1/nodes/{node_id}/actions", json={"action": "drain", "reason": "r"}, headers=auth(world.a.keys["owner"])
    )
    assert tenant.status_code == 403 and tenant.json()["code"] == "forbidden"
