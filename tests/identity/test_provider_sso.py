"""Provider staff through single sign-on: the provider's own tenant (``VELYRIX_PROVIDER_TENANT``) maps an
SSO group to ``operator`` (or a role claim to ``auditor``), and its users become provider staff, with the
provider's scopes only once their session proved a second factor. Any other tenant is refused such a map
at configuration time (403 ``identity_provider_role_refused``, nothing stored, a denied audit event), and a
provider role that reached another tenant's map anyway (written before the setting named another tenant)
never yields provider scopes: the login and SCIM map it to the default role. The browser login through
OIDC with a security key is tests/console/test_console_operator_browser.py's."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import sqlalchemy as sa

from tests.identity.conftest import Served
from velyrix.controlplane.db.models.identity import IdentityProvider

PROVIDER = "velyrix-noc"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
IDP = {"name": "okta", "kind": "oidc", "issuer": "https://okta.example", "client_id": "c"}


def _idp(**kw: object) -> IdentityProvider:
    base = {"role_claim": "role", "role_map": {}, "group_map": {}, "default_role": "viewer"}
    return IdentityProvider(**(base | kw))


def test_provider_roles_come_only_from_the_provider_tenants_maps() -> None:
    from velyrix.controlplane.identity import oidc

    idp = _idp(group_map={"noc-oncall": "operator", "admins": "owner"}, role_map={"audit": "auditor"})
    assert oidc.role_for(idp, None, ["admins", "noc-oncall"], provider_roles=True) == "operator"
    assert oidc.role_for(idp, "audit", ["admins"], provider_roles=True) == "auditor"
    assert oidc.role_for(idp, ["audit"], [], provider_roles=True) == "auditor"
    # any other tenant: the provider roles are ignored, the tenant roles stay
    assert oidc.role_for(idp, None, ["admins", "noc-oncall"]) == "owner"
    assert oidc.role_for(idp, "audit", ["noc-oncall"]) == "viewer"
    claims = {"sub": "1", "email": "ops@noc.example", "role": "audit", "groups": ["noc-oncall"]}
    assert oidc.identity(idp, claims, provider_roles=True).role == "operator"
    assert oidc.identity(idp, claims).role == "viewer"


@dataclass
class Tenants:
    served: Served
    keys: dict[str, str]  # "<tenant> owner" and "<tenant> scim"


@pytest.fixture
def tenants(home: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[Tenants]:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.ops.service import create_app

    monkeypatch.setenv("VELYRIX_PROVIDER_TENANT", PROVIDER)
    with Served(create_app()) as served:
        keys = {}
        with served.app.state.sessionmaker() as s:
            for name in (PROVIDER, "acme"):
                tenant = models.Tenant(name=name, display_name=name)
                s.add(tenant)
                s.flush()
                for role in ("owner", "scim"):
                    keys[f"{name} {role}"] = principals.issue_key(s, tenant_id=tenant.id, name=role, role=role)[1]
            s.commit()
        yield Tenants(served, keys)


def _h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_only_the_provider_tenant_may_map_a_group_to_operator(tenants: Tenants) -> None:
    from velyrix.controlplane.db import models

    url = tenants.served.url
    for maps in ({"group_map": {"noc-oncall": "operator"}}, {"role_claim": "role", "role_map": {"a": "auditor"}}):
        refused = httpx.post(f"{url}/v1/identity-providers", json=IDP | maps, headers=_h(tenants.keys["acme owner"]))
        assert refused.status_code == 403, refused.text
        assert refused.json()["code"] == "identity_provider_role_refused"
    listed = httpx.get(f"{url}/v1/identity-providers", headers=_h(tenants.keys["acme owner"]))
    assert listed.json()["items"] == []
    with tenants.served.app.state.sessionmaker() as s:
        denied = s.scalars(
            sa.select(models.AuditEvent).where(models.AuditEvent.error_code == "identity_provider_role_refused")
        ).all()
    assert len(denied) == 2 and {e.outcome for e in denied} == {"denied"}
    unknown = httpx.post(
        f"{url}/v1/identity-providers",
        json=IDP | {"group_map": {"x": "root"}},
        headers=_h(tenants.keys[f"{PROVIDER} owner"]),
    )
    assert unknown.status_code == 422 and "operator" in unknown.text  # the valid names are listed
    made = httpx.post(
        f"{url}/v1/identity-providers",
        json=IDP | {"group_map": {"noc-oncall": "operator"}},
        headers=_h(tenants.keys[f"{PROVIDER} owner"]),
    )
    assert made.status_code == 201, made.text
    assert made.json()["group_map"] == {"noc-oncall": "operator"}


def _scim_user(tenants: Tenants, tenant: str, name: str, group: str) -> str:
    url, key = f"{tenants.served.url}/scim/v2", tenants.keys[f"{tenant} scim"]
    user = httpx.post(f"{url}/Users", json={"schemas": [USER], "userName": name}, headers=_h(key))
    assert user.status_code == 201, user.text
    uid = str(user.json()["id"])
    members = {"schemas": [GROUP], "displayName": group, "members": [{"value": uid}]}
    assert httpx.post(f"{url}/Groups", json=members, headers=_h(key)).status_code == 201
    return uid


def _cookie(tenants: Tenants, user_id: str, *, mfa: bool) -> dict[str, str]:
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import sessions

    with tenants.served.app.state.sessionmaker() as s:
        user = s.get(User, user_id)
        assert user is not None
        secret = sessions.start(s, user, "oidc", mfa=mfa)[1]
        s.commit()
    return {sessions.COOKIE: secret}


def test_a_scim_group_makes_an_operator_of_the_provider_tenant_only(tenants: Tenants) -> None:
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import User

    url = tenants.served.url
    made = httpx.post(
        f"{url}/v1/identity-providers",
        json=IDP | {"group_map": {"noc-oncall": "operator"}},
        headers=_h(tenants.keys[f"{PROVIDER} owner"]),
    )
    assert made.status_code == 201, made.text
    with tenants.served.app.state.sessionmaker() as s:  # a map written before the setting named the provider
        acme = s.scalar(sa.select(models.Tenant).where(models.Tenant.name == "acme"))
        assert acme is not None
        s.add(
            _idp(
                tenant_id=acme.id,
                name="old",
                kind="oidc",
                issuer="https://old.example",
                client_id="c",
                group_map={"noc-oncall": "operator"},
                allowed_domains=[],
                groups_claim="groups",
            )
        )
        s.commit()

    ops = _scim_user(tenants, PROVIDER, "ops@noc.example", "noc-oncall")
    impostor = _scim_user(tenants, "acme", "ops@acme.example", "noc-oncall")
    with tenants.served.app.state.sessionmaker() as s:
        assert s.get(User, ops).role == "operator"  # type: ignore[union-attr]
        assert s.get(User, impostor).role == "viewer"  # type: ignore[union-attr]

    with_key = _cookie(tenants, ops, mfa=True)
    fleet = httpx.get(f"{url}/console/fleet", cookies=with_key)
    assert fleet.status_code == 200 and "0 of 0 nodes shown" in fleet.text
    assert httpx.get(f"{url}/v1/rma-records", cookies=with_key).status_code == 200  # a provider route
    # before a second factor, the provider role has no scope at all
    assert httpx.get(f"{url}/console/fleet", cookies=_cookie(tenants, ops, mfa=False)).status_code == 403
    assert httpx.get(f"{url}/v1/rma-records", cookies=_cookie(tenants, ops, mfa=False)).status_code == 403
    # the other tenant's user in the same group is a viewer of acme, never provider staff
    acme_cookie = _cookie(tenants, impostor, mfa=True)
    assert httpx.get(f"{url}/console/fleet", cookies=acme_cookie).status_code == 403
    assert httpx.get(f"{url}/v1/rma-records", cookies=acme_cookie).status_code == 403
    assert httpx.get(f"{url}/v1/clusters", cookies=acme_cookie).status_code == 200
