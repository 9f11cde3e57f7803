"""Every /v1 route x every principal, built from the app's route table (a new route cannot be
forgotten: it needs a sample body and path parameters here, or this test fails).

Expected: no key, malformed, unknown, revoked and expired keys -> 401; a role without the route's
scope -> 403; a role with it -> 2xx on its own objects; a tenant key on another tenant's ids -> 404
(with nothing of the object in the answer); lists never show another tenant's objects.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from typing import Any

import pytest
from fastapi.routing import APIRoute

from tests.controlplane import cmk_tenant
from tests.controlplane.conftest import PROVIDER_ROLES, TENANT_ROLES, World, auth, cluster_body, unique
from velyrix.controlplane.auth import keys, roles
from velyrix.ops.service import ROUTERS

ROUTES = [r for router in ROUTERS for r in router.routes if isinstance(r, APIRoute) and r.path.startswith("/v1")]
BAD_KEYS = ("none", "malformed", "unknown", "revoked", "expired")
_MONTH_COUNT = itertools.count()


def fresh_month() -> str:
    """A billing month not used before in this run (a month closes once; one invoice per tenant and month)."""
    n = next(_MONTH_COUNT)
    return f"{2030 + n // 12}-{n % 12 + 1:02d}"


def required_scope(route: APIRoute) -> str:
    scopes = [d.call.required_scope for d in route.dependant.dependencies if hasattr(d.call, "required_scope")]
    assert len(scopes) == 1, f"{route.name} declares {len(scopes)} required scopes"
    return str(scopes[0])


ROLLOUT_BODY = {
    "name": "driver_580",
    "region": "us-east-1",
    "component": "gpu_driver",
    "version": "580.95.05",
    "target": {"node_type": "hgx-h200-8g"},
    "stages": ["staging", "production"],
    "window": {"days": ["sat"], "start": "02:00", "hours": 6},
}


def rollout_row(world: World) -> str:
    """A stored rollout (pending) for the routes that act on one."""
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models import rollouts

    with world.session() as s:
        row = rollouts.Rollout(
            id=models.new_id("rol"),
            name=unique("r"),
            region="us-east-1",
            component="gpu_driver",
            version="580.95.05",
            spec={},
            plan={"waves": []},
            state="pending",
            created_by="test",
            announced_at=dt.datetime.now(dt.UTC),
        )
        s.add(row)
        s.commit()
        return row.id


def body_for(route: APIRoute, world: World, principal_role: str, cluster_name: str | None) -> dict[str, Any] | None:
    provider = principal_role in PROVIDER_ROLES
    samples: dict[str, Any] = {
        "tenants.create": {"name": unique("t")},
        "tenants.update": {"display_name": "Renamed"},
        "api_keys.create": {"name": unique("k"), "role": principal_role if provider else "viewer"},
        "clusters.create": cluster_body(unique("c")),
        "clusters.update": cluster_body(cluster_name or "x", node_count=2),
        "nodes.create": {"name": unique("gpu"), "region": "us-east-1", "node_type": "hgx-h200-8g"},
        "nodes.update": {"labels": {"rack": "r1"}},
        "nodes.act": {"action": "drain", "reason": "matrix"},
        "volumes.create": {"name": unique("v"), "region": "us-east-1", "tier": "object", "size_tb": 5},
        "volumes.update": {"size_tb": 50},
        "clusters.destroy": {"delete_volumes": False},
        "api_keys.rotate": {"grace_s": 0},
        "identity_policy.set": {"step_up_s": 300},
        "users.update": {"role": "viewer"},
        "identity_providers.create": {
            "name": unique("idp"),
            "kind": "oidc",
            "issuer": "https://i.example",
            "client_id": "c",
        },
        "sim.faults": {"node": "use1-h200-su00-n00", "kind": "xid", "xid": 79, "gpu": 0},
        "customer_keys.create": {
            "name": unique("cmk"),
            "provider": "kmip",
            "kmip": {"host": "127.0.0.1", "port": 9, "key_id": "1", "ca_pem": "-"},
            "credential": {"client_cert_pem": "-", "client_key_pem": "-"},
        },
        "customer_keys.rotate": {"key_id": "2"},
        "customer_keys.grant": {"credential": {"client_cert_pem": "-", "client_key_pem": "-"}},
        "volume_data.write": {"name": "o", "data_b64": "AA=="},
        "nodes.report": {"hostname": "gpu-0", "collected_at_s": 1.0, "up": True, "problems": [], "sample": {}},
        "incidents.act": {"action": "note", "text": "investigating"},
        "event_integrations.create": {"service": unique("svc")},
        "physical_access.ingest": {
            "kind": "access_granted",
            "site": "use1-dc2",
            "door": "cage-07",
            "occurred_at": dt.datetime.now(dt.UTC).isoformat(),
            "reader_event_id": unique("r"),
        },
        "rollouts.plan": ROLLOUT_BODY,
        "rollouts.create": ROLLOUT_BODY,
        "rollouts.act": {"action": "pause"},
        "sim.defects": {"component": "gpu_driver", "version": "580.95.05", "effect": "xid:79"},
        "contracts.set": {"hcl": 'contract "gold" {\n  availability_target_percent = 99.95\n}\n'},
        "alerts.alertmanager": {
            "version": "4",
            "groupKey": unique('{}:{alertname="GpuXid"}'),
            "status": "firing",
            "alerts": [{"status": "firing", "labels": {"alertname": "GpuXid"}, "fingerprint": "f00d"}],
        },
    }
    if route.name == "billing_months.close":
        return {"month": fresh_month()}
    if route.name in ACCESS_BODIES:
        return ACCESS_BODIES[route.name](world)
    if route.name == "connectivity.set":
        return {"hcl": CONNECTIVITY_HCL % (cluster_name or "x")}
    if route.name == "maintenance_windows.create":
        return {
            "cluster_id": world.cluster(world.a),
            "starts_at": "2026-12-20T00:00:00Z",
            "ends_at": "2026-12-20T02:00:00Z",
            "label": "fabric firmware",
        }
    if route.body_field is None:
        return None
    assert route.name in samples, f"add a sample body for the new route {route.name}"
    return samples[route.name]


def _access_user(world: World) -> str:
    """A user of tenant a (certificates are for a tenant's users)."""
    from velyrix.controlplane.db.models.identity import User

    with world.session() as s:
        user = User(tenant_id=world.a.tenant_id, user_name=unique("u") + "@a.example", role="member")
        s.add(user)
        s.commit()
        return user.id


def _public_key() -> str:
    from velyrix.controlplane.access import ssh_ca

    return ssh_ca.new_authority("matrix").public_key


ACCESS_BODIES: dict[str, Any] = {
    "ssh_certificates.create": lambda w: {
        "cluster_id": w.cluster(w.a),
        "user_id": _access_user(w),
        "public_key": _public_key(),
    },
    "access_approvals.create": lambda w: {"action": "ssh"},
    "operator_certificates.create": lambda w: {"public_key": _public_key()},
}
"""Bodies of the access routes (ops/access_routes.py); the clusters in them are managed, so an operator's
certificate needs no approval here (the gate: GATED_NODE_ROUTES below, tests/controlplane/test_access_gate.py)."""


CONNECTIVITY_HCL = """resource "velyrix_private_link" "aws" {
  cluster         = "%s"
  cloud           = "aws"
  location        = "EqDC2"
  port_speed_gbps = 10
  vlan            = 100
  asn             = 65010
  local_address   = "169.254.10.1/30"
  peer_address    = "169.254.10.2/30"
}
"""


def path_for(route: APIRoute, world: World, owner: Any, principal_role: str) -> tuple[str, str | None, str | None]:
    """(path, object id, object name) with fresh objects of ``owner`` (a TenantWorld)."""
    params = re.findall(r"{(\w+)}", route.path)
    if not params:
        return route.path, None, None
    (param,) = params
    name = None
    if param == "tenant_id":
        obj = owner.tenant_id
    elif param == "key_id":
        provider = principal_role in PROVIDER_ROLES and owner is world.a
        obj = world.key(None if provider else owner, "operator" if provider else "viewer")[0]
    elif param == "cluster_id":
        obj = world.cluster(owner)
        with world.session() as s:
            from velyrix.controlplane.db import models

            name = s.get(models.Cluster, obj).name
    elif param == "node_id":
        obj = world.node(owner, world.cluster(owner))
    elif param in ("volume_id", "event_id", "cmk_id", "user_id"):
        made = {
            "volume_id": world.volume,
            "event_id": world.audit_event,
            "cmk_id": lambda t: cmk_tenant.customer_key(world, t),
            "user_id": lambda t: member(world, t),
        }
        obj = made[param](owner)
    elif param == "region":
        obj = "us-east-1"
    elif param == "hostname":
        with world.session() as s:
            from velyrix.controlplane.db import models

            obj = s.get(models.Node, world.node(owner, world.cluster(owner))).name
    elif param == "rollout_id":
        obj = rollout_row(world)
    elif param in ("incident_id", "invoice_id", "credit_note_id"):
        obj = billing_object(world, owner, param)
    elif param == "provider_id":
        from velyrix.controlplane.db.models.identity import IdentityProvider

        with world.session() as s:
            idp = IdentityProvider(
                tenant_id=owner.tenant_id, name=unique("idp"), kind="oidc", issuer="https://i.example"
            )
            s.add(idp)
            s.commit()
            obj = idp.id
    else:
        raise AssertionError(f"add a path parameter resolver for {param} ({route.name})")
    seed_for(route, world, obj, owner)
    return route.path.replace("{" + param + "}", obj), obj, name


def member(world: World, owner: Any) -> str:
    """A new member (a user with the role ``member``) of ``owner``'s tenant."""
    from velyrix.controlplane.db.models.identity import User

    with world.session() as s:
        user = User(tenant_id=owner.tenant_id, user_name=f"{unique('u')}@example.com", role="member")
        s.add(user)
        s.commit()
        return user.id


def billing_object(world: World, owner: Any, param: str) -> str:
    """A fresh incident, invoice or credit note of ``owner`` straight in the database."""
    from velyrix.controlplane.db import health_tables
    from velyrix.controlplane.db.models import noc as models_noc

    with world.session() as s:
        if param == "incident_id":
            obj: Any = health_tables.Incident(
                number=unique("INC"), key=unique("k"), priority="P2", title="t", tenant_id=owner.tenant_id, nodes=[]
            )
        elif param == "invoice_id":
            obj = models_noc.Invoice(
                tenant_id=owner.tenant_id,
                number=unique("INV"),
                month=fresh_month(),
                lines=[],
                credits=[],
                subtotal="0",
                credits_applied="0",
                total="0",
            )
        else:
            obj = models_noc.CreditNote(
                tenant_id=owner.tenant_id,
                number=unique("CN"),
                month="2026-11",
                cluster_id="clu_x",
                amount="1.00",
                remaining="1.00",
                applications=[],
                evidence={},
            )
        s.add(obj)
        s.commit()
        return str(obj.id)


def seed_for(route: APIRoute, world: World, obj: str, owner: Any) -> None:
    """Routes that read a child object get one, so that a role with the scope gets 2xx."""
    import sqlalchemy as sa

    from velyrix.controlplane.db import health_tables
    from velyrix.controlplane.reconcile import tables

    with world.session() as s:
        if route.name == "clusters.acceptance":
            s.add(
                tables.AcceptanceReport(
                    tenant_id=owner.tenant_id,
                    cluster_id=obj,
                    region="us-east-1",
                    passed=True,
                    report={"report": {"cluster": {"id": obj}}, "signature": {}},
                )
            )
        elif route.name == "nodes.last_report":
            s.add(
                health_tables.NodeReport(
                    node_id=obj,
                    tenant_id=owner.tenant_id,
                    collected_at_s=1.0,
                    up=True,
                    problems=[],
                    sample={},
                    health_summary="",
                    actions=[],
                    reports=1,
                )
            )
        elif route.name == "clusters.fabric":  # a cluster past Networking has its VLAN (and no nodes yet)
            taken = set(s.scalars(sa.select(tables.NetworkAllocation.value)))
            if not s.scalar(sa.select(tables.NetworkAllocation).where(tables.NetworkAllocation.cluster_id == obj)):
                s.add(
                    tables.NetworkAllocation(
                        region="us-east-1",
                        kind="vlan",
                        value=max(taken | {3000}) + 1,
                        tenant_id=owner.tenant_id,
                        cluster_id=obj,
                    )
                )
        elif route.name == "clusters.scheduler":  # a cluster whose Scheduler step delivered its Slurm
            from velyrix.controlplane.db.models import scheduler as scheduler_tables

            if not s.scalar(
                sa.select(scheduler_tables.SchedulerDelivery).where(
                    scheduler_tables.SchedulerDelivery.cluster_id == obj
                )
            ):
                s.add(
                    scheduler_tables.SchedulerDelivery(
                        cluster_id=obj, tenant_id=owner.tenant_id, kind="slurm", state="ready", env={}, nodes=[]
                    )
                )
        s.commit()


NO_TWIN = {
    "sim.faults",
    "sim.events",
    "sim.proactive",
    "sim.defects",
    "volume_data.write",
    "volume_data.read",
    "rollouts.plan",
    "rollouts.create",
}
"""The app under test runs without a digital twin: a role with the scope gets 409 ``no_twin``."""
NO_KEY_MANAGER = {
    "customer_keys.create": (403, "cmk_endpoint_not_allowed"),
    "customer_keys.grant": (403, "cmk_endpoint_not_allowed"),
    "customer_keys.rotate": (409, "cmk_grant_revoked"),
    "customer_keys.destroy": (409, "cmk_grant_revoked"),
}
"""The app under test allows no tenant HSM or key manager, and its customer keys have no grant (the real ones:
tests/controlplane/test_customer_keys.py): a role with the scope gets these problems, never 2xx."""


def secret_for(world: World, who: str) -> str | None:
    if who in TENANT_ROLES:
        return world.a.keys[who]
    if who in PROVIDER_ROLES:
        return world.provider[who]
    if who == "malformed":
        return "vlx_not-a-key"
    if who == "unknown":
        return keys.generate()
    if who == "revoked":
        return world.revoked
    if who == "expired":
        return world.expired
    return None


def call(client: Any, route: APIRoute, path: str, secret: str | None, body: Any) -> Any:
    (method,) = route.methods
    headers = auth(secret) if secret else {}
    return client.request(method, path, headers=headers, json=body)


ROUTE_IDS = [f"{next(iter(r.methods))} {r.path}" for r in ROUTES]


def test_every_v1_route_requires_exactly_one_known_scope() -> None:
    assert ROUTES, "no /v1 routes found"
    for route in ROUTES:
        assert required_scope(route) in roles.SCOPES


@pytest.mark.parametrize("route", ROUTES, ids=ROUTE_IDS)
@pytest.mark.parametrize("who", TENANT_ROLES + PROVIDER_ROLES + BAD_KEYS)
def test_route_answers_each_principal_as_its_scopes_say(client: Any, world: World, route: APIRoute, who: str) -> None:
    path, _obj, name = path_for(route, world, world.a, who)
    resp = call(client, route, path, secret_for(world, who), body_for(route, world, who, name))
    if who in BAD_KEYS:
        assert resp.status_code == 401, resp.text
        assert resp.json()["code"] == "unauthenticated"
        return
    if required_scope(route) not in roles.ALL_ROLES[who]:
        assert resp.status_code == 403, resp.text
        assert resp.json()["code"] == "forbidden"
        return
    if route.name in NO_TWIN:
        assert resp.status_code == 409 and resp.json()["code"] == "no_twin", resp.text
        return
    if route.name in NO_KEY_MANAGER:
        assert (resp.status_code, resp.json()["code"]) == NO_KEY_MANAGER[route.name], resp.text
        return
    assert 200 <= resp.status_code < 300, f"{who} {route.name}: {resp.status_code} {resp.text}"
    if route.path.endswith("s") and resp.status_code == 200 and who in TENANT_ROLES:
        # lists: nothing of tenant b
        assert world.b.tenant_id not in resp.text


FOREIGN_ROUTES = [r for r in ROUTES if "{" in r.path and not r.path.endswith("{region}")]


@pytest.mark.parametrize("route", FOREIGN_ROUTES, ids=[f"{next(iter(r.methods))} {r.path}" for r in FOREIGN_ROUTES])
@pytest.mark.parametrize("who", TENANT_ROLES)
def test_another_tenants_object_answers_404_without_a_trace(
    client: Any, world: World, route: APIRoute, who: str
) -> None:
    path, obj, name = path_for(route, world, world.b, who)
    resp = call(client, route, path, world.a.keys[who], body_for(route, world, who, name))
    if required_scope(route) not in roles.TENANT_ROLES[who]:
        assert resp.status_code == 403, resp.text
        return
    assert resp.status_code == 404, f"{who} {route.name}: {resp.status_code} {resp.text}"
    # Indistinguishable from an id that does not exist at all (apart from the id itself).
    missing = obj[:-6] + "ffffff" if obj and obj[-6:] != "ffffff" else obj[:-6] + "eeeeee"
    ghost = call(client, route, path.replace(obj, missing), world.a.keys[who], body_for(route, world, who, name))
    assert ghost.status_code == 404

    def normal(r: Any, oid: str) -> dict[str, Any]:
        return {k: v for k, v in r.json().items() if k != "request_id"} | {"_": r.text.count(oid)}

    assert str(normal(resp, obj)).replace(obj, "ID") == str(normal(ghost, missing)).replace(missing, "ID")
    if obj != world.b.tenant_id:
        assert world.b.tenant_id not in resp.text
    if name:
        assert name not in resp.text


def test_provider_keys_do_not_see_tenant_keys(client: Any, world: World) -> None:
    key_id = world.a.key_ids["viewer"]
    resp = client.get(f"/v1/api-keys/{key_id}", headers=auth(world.provider["operator"]))
    assert resp.status_code == 404
    listed = client.get("/v1/api-keys", headers=auth(world.provider["operator"])).json()["items"]
    assert listed and all(k["tenant_id"] is None for k in listed)


def test_lists_of_each_tenant_hold_only_its_objects(client: Any, world: World) -> None:
    for tenant in (world.a, world.b):
        world.cluster(tenant)
        world.volume(tenant)
        world.node(tenant)
        for param in ("incident_id", "invoice_id", "credit_note_id"):
            billing_object(world, tenant, param)
    lists = ("/v1/clusters", "/v1/volumes", "/v1/nodes", "/v1/api-keys", "/v1/tenants", "/v1/audit-events")
    for path in (*lists, "/v1/incidents", "/v1/invoices", "/v1/credit-notes"):
        for me, other in ((world.a, world.b), (world.b, world.a)):
            items = client.get(path, headers=auth(me.keys["owner"]), params={"limit": 200}).json()["items"]
            assert items, path
            for item in items:
                assert item.get("tenant_id", item.get("id")) == me.tenant_id, (path, item)
            if path != "/v1/audit-events":  # a's own refused attempts on b's ids name them, rightly
                assert other.tenant_id not in str(items)
    enrolled = {"limit": 200, "provisioning_state": "enrolled"}  # the tenants' nodes, not the free fleet
    fleet = client.get("/v1/nodes", headers=auth(world.provider["operator"]), params=enrolled).json()["items"]
    assert {n["tenant_id"] for n in fleet} >= {world.a.tenant_id, world.b.tenant_id}


GATED_NODE_ROUTES: dict[str, Any] = {
    "nodes.update": lambda: {"labels": {"rack": "r1"}},
    "nodes.act": lambda: {"action": "reboot", "reason": "matrix"},
    "operator_certificates.create": lambda: {"public_key": _public_key()},
}
"""Routes by which a provider key acts on a tenant's node: on a self-operated cluster's node the role's
scope is not enough (controlplane/access/provider_actions.py, access/approvals.py)."""
GATED = [r for r in ROUTES if r.name in GATED_NODE_ROUTES]


def test_every_gated_node_route_is_in_the_app() -> None:
    assert sorted(r.name for r in GATED) == sorted(GATED_NODE_ROUTES)


@pytest.mark.parametrize("route", GATED, ids=[r.name for r in GATED])
@pytest.mark.parametrize("who", PROVIDER_ROLES + TENANT_ROLES)
def test_provider_action_on_a_self_operated_node_needs_more_than_the_scope(
    client: Any, world: World, route: APIRoute, who: str
) -> None:
    from tests.controlplane.test_access_gate import self_operated

    _, node_id = self_operated(client, world)
    path = route.path.replace("{node_id}", node_id)
    resp = call(client, route, path, secret_for(world, who), GATED_NODE_ROUTES[route.name]())
    scopes = roles.PROVIDER_ROLES[who] if who in PROVIDER_ROLES else roles.TENANT_ROLES[who]
    if required_scope(route) not in scopes:
        assert resp.status_code == 403 and resp.json()["code"] == "forbidden", resp.text
    else:  # a provider role with the scope: the tenant's approval or a break-glass is still needed
        assert who in PROVIDER_ROLES
        assert resp.status_code == 403 and resp.json()["code"] == "access_approval_required", resp.text
