"""Through the API: provider action (an operator's SSH certificate) on a self-operated cluster's node is
refused without the tenant's approval; an approval works once; a break-glass works, is audited with its
reason and opens a NOC incident the tenant sees. Tenant root on a managed cluster is refused."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from tests.controlplane.conftest import World, auth, cluster_body, unique
from velyrix.controlplane.access import ssh_ca
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import User


def public_key() -> str:
    return ssh_ca.new_authority("test").public_key


def self_operated(client: Any, world: World) -> tuple[str, str]:
    """A self-operated cluster of tenant a made through the API, and a node of it."""
    body = cluster_body(unique("so")) | {"operating_mode": "self_operated"}
    resp = client.post("/v1/clusters", json=body, headers=auth(world.a.keys["owner"]))
    assert resp.status_code in (200, 201, 202), resp.text
    cluster_id = resp.json()["id"]
    return cluster_id, world.node(world.a, cluster_id)


def events(world: World, action: str, target: str) -> list[models.AuditEvent]:
    with world.session() as s:
        q = sa.select(models.AuditEvent).where(models.AuditEvent.action == action, models.AuditEvent.target == target)
        return list(s.scalars(q))


def test_operator_needs_approval_or_break_glass_on_a_self_operated_node(client: Any, world: World) -> None:
    cluster_id, node_id = self_operated(client, world)
    op = auth(world.provider["operator"])
    path = f"/v1/nodes/{node_id}/operator-certificates"
    refused = client.post(path, json={"public_key": public_key()}, headers=op)
    assert refused.status_code == 403 and refused.json()["code"] == "access_approval_required", refused.text
    assert events(world, "access.provider.refuse", cluster_id)[0].outcome == "denied"

    approval = client.post(
        f"/v1/clusters/{cluster_id}/access-approvals", json={"action": "ssh"}, headers=auth(world.a.keys["owner"])
    )
    assert approval.status_code == 201, approval.text
    approval_id = approval.json()["id"]
    ok = client.post(path, json={"public_key": public_key(), "approval_id": approval_id}, headers=op)
    assert ok.status_code == 201, ok.text
    assert ok.json()["via"] == "approval" and ok.json()["principals"] == [ssh_ca.OPERATOR]
    assert "PRIVATE KEY" not in ok.text  # the CA's key stays sealed (controlplane/access/ca_sealing.py)
    again = client.post(path, json={"public_key": public_key(), "approval_id": approval_id}, headers=op)
    assert again.status_code == 403 and "used or expired" in again.json()["detail"]

    short = client.post(path, json={"public_key": public_key(), "break_glass_reason": "urgent"}, headers=op)
    assert short.status_code == 422
    reason = "node unreachable over the tenant's network, tenant paged twice without answer"
    glass = client.post(path, json={"public_key": public_key(), "break_glass_reason": reason}, headers=op)
    assert glass.status_code == 201, glass.text
    assert glass.json()["via"] == "break_glass" and glass.json()["incident"]
    (event,) = events(world, "access.break_glass", node_id)
    assert event.tenant_id == world.a.tenant_id and event.detail["reason"] == reason
    # the tenant is told: the incident is in its own incident list, with the reason
    listed = client.get("/v1/incidents", headers=auth(world.a.keys["viewer"]), params={"cluster_id": cluster_id})
    (incident,) = [i for i in listed.json()["items"] if i["number"] == glass.json()["incident"]]
    assert "Break-glass" in incident["title"] and incident["detail"] == reason


def test_both_approval_and_break_glass_is_a_422(client: Any, world: World) -> None:
    _, node_id = self_operated(client, world)
    body = {"public_key": public_key(), "approval_id": "apv_x", "break_glass_reason": "x" * 20}
    resp = client.post(
        f"/v1/nodes/{node_id}/operator-certificates", json=body, headers=auth(world.provider["operator"])
    )
    assert resp.status_code == 422


def test_tenant_root_on_a_managed_cluster_is_refused(client: Any, world: World) -> None:
    cluster_id = world.cluster(world.a)  # managed (the default)
    with world.session() as s:
        user = User(tenant_id=world.a.tenant_id, user_name=unique("o") + "@a.example", role="owner")
        s.add(user)
        s.commit()
        user_id = user.id
    body = {"cluster_id": cluster_id, "user_id": user_id, "public_key": public_key(), "root": True}
    resp = client.post("/v1/ssh-certificates", json=body, headers=auth(world.a.keys["owner"]))
    assert resp.status_code == 403 and resp.json()["code"] == "access_tenant_root_refused", resp.text
    body["root"] = False
    ok = client.post("/v1/ssh-certificates", json=body, headers=auth(world.a.keys["owner"]))
    assert ok.status_code == 201, ok.text
    assert ok.json()["principals"] == [ssh_ca.tenant_principal(world.a.tenant_id), ssh_ca.USER]
    # the other tenant's cluster is not found, as if it did not exist
    other = client.post(
        "/v1/ssh-certificates", json=body | {"cluster_id": world.cluster(world.b)}, headers=auth(world.a.keys["owner"])
    )
    assert other.status_code == 404
