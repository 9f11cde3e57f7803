"""Every console route x every tenant role x own and foreign ids, built from the route table (a new
console route cannot be forgotten: it needs its path parameters here, or this test fails), like the
API's authorization matrix (tests/controlplane/test_authorization_matrix.py).

Expected: without a session, pages send the browser to the sign-in page and posts answer 401; a role
without the route's scope gets 403; with it, 2xx/303 on its own tenant's objects and 404 on the foreign
tenant's ids, and no answer ever carries the foreign tenant's names or ids. Posts without the session's
CSRF token answer 403 and change nothing; each console action leaves an audit event ``console.*``."""

from __future__ import annotations

import itertools
import urllib.parse
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from tests.console import admin_seed
from tests.console import test_console_tenant as console_tenant
from tests.console.conftest import Tenant, World
from tests.controlplane.conftest import TENANT_ROLES
from velyrix.controlplane.auth import roles
from velyrix.controlplane.identity import sessions
from velyrix.ops.service import CONSOLE_ROUTERS

ROUTES = [r for router in CONSOLE_ROUTERS for r in router.routes if isinstance(r, APIRoute)]
PUBLIC = {"console.root", "console.home", "console.sign_in", "console.static"}
_COUNT = itertools.count()


def required_scope(route: APIRoute) -> str | None:
    scopes = [d.call.required_scope for d in route.dependant.dependencies if hasattr(d.call, "required_scope")]
    assert len(scopes) <= 1, route.name
    if not scopes:
        assert route.name in PUBLIC, f"{route.name} has no required scope and is not a public page"
        return None
    return str(scopes[0])


GUARDED = [r for r in ROUTES if required_scope(r) is not None]


def _fresh_key(world: World, tenant: Tenant, role: str = "viewer") -> str:
    from velyrix.controlplane.auth import principals

    with world.app.state.sessionmaker() as s:
        key, _ = principals.issue_key(s, tenant_id=tenant.id, name=f"to-revoke-{next(_COUNT)}", role=role)
        s.commit()
        return key.id


def url_of(route: APIRoute, world: World, ids: Tenant) -> str:
    values = {"cluster_id": ids.cluster_id, "key_id": ids.key_id, "incident_id": ids.incident_id}
    values |= {"invoice_id": ids.invoice_id, "credit_note_id": ids.credit_note_id}
    values["node_id"] = ids.node_ids[0]
    values["rollout_id"] = "rollout-of-the-provider"  # provider-only: every tenant role gets 403 first
    values |= {k: ids.admin[k] for k in ("incident_id", "certificate_id", "user_id", "provider_id")}
    if route.name == "console.api_keys.revoke" and ids is world.acme:
        values["key_id"] = _fresh_key(world, ids)
    if route.name == "console.scim_tokens.revoke":
        values["key_id"] = _fresh_key(world, ids, "scim") if ids is world.acme else ids.admin["scim_key_id"]
    if route.name == "console.identity_providers.delete" and ids is world.acme:
        values["provider_id"] = admin_seed.provider(world.app, ids.id, f"gone-{next(_COUNT)}")
    names = set(route.param_convertors)
    missing = names - set(values)
    assert not missing, f"{route.name}: add sample values for {sorted(missing)}"
    return route.path_format.format(**{k: values[k] for k in names})


ADMIN_FORMS: dict[str, dict[str, str]] = {
    "console.identity_providers.create": {"kind": "oidc", "issuer": "https://idp.example", "client_id": "c"},
    "console.identity_policy.set": {"mfa_required": "on", "step_up_s": "300"},
}


def call(client: TestClient, route: APIRoute, url: str, secret: str | None, csrf: bool = True) -> Any:
    headers = {"cookie": f"{sessions.COOKIE}={secret}"} if secret else {}
    method = sorted(route.methods)[0]
    if method == "POST":
        form = {"csrf": sessions.csrf_token(secret) if secret and csrf else ""}
        if route.name == "console.api_keys.create":
            form |= {"name": f"console-key-{next(_COUNT)}", "role": "viewer"}
        if route.name in ("console.clusters.plan", "console.clusters.create"):
            form |= console_tenant.declaration_form(client.app, f"leak-{next(_COUNT)}")
        form |= ADMIN_FORMS.get(route.name, {})
        if route.name == "console.identity_providers.create":
            form |= {"name": f"idp-{next(_COUNT)}"}
        if route.name == "console.scim_tokens.create":
            form |= {"name": f"scim-{next(_COUNT)}"}
        if route.name == "console.users.update" and secret and csrf:
            admin_seed.step_up(client.app, secret)  # the API asks an owner's session for a step-up
            form |= {"role": "member"}
        return client.post(url, data=form, headers=headers, follow_redirects=False)
    if route.name == "console.cluster_stream":
        with client.stream("GET", url, headers=headers, follow_redirects=False) as answer:
            first = next(answer.iter_text()) if answer.status_code == 200 else answer.read().decode()
            return _Answer(answer.status_code, first, answer.headers)
    return client.get(url, headers=headers, follow_redirects=False)


class _Answer:
    """What the test reads of a streamed answer: its status, first chunk and headers."""

    def __init__(self, status_code: int, text: str, headers: Any) -> None:
        self.status_code, self.text, self.headers = status_code, text, headers


def assert_no_leak(world: World, text: str, asked: str = "") -> None:
    """Nothing of the foreign tenant in ``text``, except an id the request itself named (``asked``: its
    URL; a 404 repeats it, as the API's does)."""
    beta = world.beta
    bits = (beta.cluster_id, beta.cluster_name, beta.key_id, beta.key_name, beta.id, *beta.node_names)
    bits += (beta.incident_id,)
    bits += (beta.invoice_id, beta.invoice_number, beta.credit_note_id, beta.credit_note_number, beta.volume_name)
    bits += (beta.team,)
    bits += tuple(beta.node_ids)
    bits += (*beta.admin.values(), *(f"{r}@beta.example" for r in TENANT_ROLES))
    for secret_bit in (b for b in bits if b not in asked):
        assert secret_bit not in text, f"foreign {secret_bit!r} in the answer"


def _asked_before(world: World) -> str:
    """The foreign ids that acme's requests named in their URLs (recorded as their audit events' targets)."""
    beta = world.beta
    named = ("incident_id", "certificate_id", "user_id", "provider_id", "scim_key_id")
    others = (beta.incident_id, beta.invoice_id, beta.credit_note_id, beta.node_ids[0])  # other pages' ids
    return " ".join((beta.cluster_id, beta.key_id, *others, *(beta.admin[k] for k in named)))


@pytest.fixture(scope="module")
def client(world: World) -> Any:
    with TestClient(world.app, base_url="https://testserver") as c:
        yield c


@pytest.mark.parametrize("route", GUARDED, ids=lambda r: r.name)
def test_without_a_session_nothing_is_shown(client: TestClient, world: World, route: APIRoute) -> None:
    url = url_of(route, world, world.beta)
    answer = call(client, route, url, None)
    if "GET" in route.methods:
        assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in?" + urllib.parse.urlencode(
            {"next": url}
        )
    else:
        assert answer.status_code == 401
    assert_no_leak(world, answer.text, url)


@pytest.mark.parametrize("role", TENANT_ROLES)
@pytest.mark.parametrize("route", GUARDED, ids=lambda r: r.name)
def test_every_role_sees_its_own_and_never_the_foreign(
    client: TestClient, world: World, route: APIRoute, role: str
) -> None:
    allowed = required_scope(route) in roles.TENANT_ROLES[role]
    secret = world.acme.sessions[role]
    own = call(client, route, url_of(route, world, world.acme), secret)
    if allowed:
        assert own.status_code in (200, 201, 303), (route.name, role, own.status_code, own.text[:300])
    else:
        assert own.status_code == 403, (route.name, role, own.status_code)
    # a list shows the tenant's own objects only; its own audit log may repeat the ids its own requests
    # named (the foreign ids this test asked for, refused with 404: the event's target), nothing else
    assert_no_leak(world, own.text, _asked_before(world) if route.name == "console.audit" else "")
    if not route.param_convertors:
        return
    url = url_of(route, world, world.beta)
    foreign = call(client, route, url, secret)
    assert foreign.status_code == (404 if allowed else 403), (route.name, role, foreign.status_code)
    assert_no_leak(world, foreign.text, url)


@pytest.mark.parametrize("route", [r for r in GUARDED if "POST" in r.methods], ids=lambda r: r.name)
def test_a_post_without_the_csrf_token_is_refused(client: TestClient, world: World, route: APIRoute) -> None:
    url = url_of(route, world, world.acme)
    before = _key_states(world)
    answer = call(client, route, url, world.acme.sessions["owner"], csrf=False)
    assert answer.status_code == 403 and "identity_csrf_failed" in answer.text
    after = _key_states(world)
    assert {k: v for k, v in after.items() if k in before} == before and len(after) == len(before)


def _key_states(world: World) -> dict[str, bool]:
    from velyrix.controlplane.db import models

    with world.app.state.sessionmaker() as s:
        return {k.id: k.revoked_at is None for k in s.scalars(sa.select(models.ApiKey))}


def test_console_actions_are_audited_as_console_events(client: TestClient, world: World) -> None:
    from velyrix.controlplane.db import models

    secret = world.acme.sessions["admin"]
    headers = {"cookie": f"{sessions.COOKIE}={secret}"}
    made = client.post(
        "/console/keys",
        data={"csrf": sessions.csrf_token(secret), "name": "audited", "role": "member"},
        headers=headers,
    )
    assert made.status_code == 201 and "vlx_" in made.text
    with world.app.state.sessionmaker() as s:
        key = s.scalars(sa.select(models.ApiKey).where(models.ApiKey.name == "audited")).one()
        event = s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.target == f"api-keys/{key.id}")).one()
    assert event.action == "console.api_keys.create" and event.outcome == "success"
    assert event.actor.endswith("(admin@acme.example)") and event.tenant_id == world.acme.id
    gone = client.post(f"/console/keys/{key.id}/revoke", data={"csrf": sessions.csrf_token(secret)}, headers=headers)
    assert gone.status_code == 200  # followed to the list
    with world.app.state.sessionmaker() as s:
        actions = list(
            s.scalars(sa.select(models.AuditEvent.action).where(models.AuditEvent.target == f"api-keys/{key.id}"))
        )
        assert s.get(models.ApiKey, key.id).revoked_at is not None
    assert sorted(actions) == ["console.api_keys.create", "console.api_keys.revoke"]


def test_a_refused_form_shows_each_error_beside_its_field(client: TestClient, world: World) -> None:
    from velyrix.controlplane.db import models

    secret = world.acme.sessions["admin"]
    headers = {"cookie": f"{sessions.COOKIE}={secret}"}
    form = {"csrf": sessions.csrf_token(secret), "name": "", "role": "viewer", "expires_in_s": "5"}
    answer = client.post("/console/keys", data=form, headers=headers)
    assert answer.status_code == 422
    assert 'id="key-name-error"' in answer.text and 'id="key-expires_in_s-error"' in answer.text
    assert 'aria-describedby="key-name-error"' in answer.text
    # an admin cannot make an owner key: the API's own rule, shown beside the role
    owner = client.post(
        "/console/keys", data={**form, "name": "too-strong", "role": "owner", "expires_in_s": ""}, headers=headers
    )
    assert owner.status_code == 403 and 'id="key-role-error"' in owner.text
    with world.app.state.sessionmaker() as s:
        denied = list(
            s.scalars(
                sa.select(models.AuditEvent).where(
                    models.AuditEvent.action == "console.api_keys.create", models.AuditEvent.outcome == "denied"
                )
            )
        )
        assert not s.scalars(sa.select(models.ApiKey).where(models.ApiKey.name == "too-strong")).first()
    assert {e.status_code for e in denied} >= {422, 403}


def test_an_oversized_field_is_refused_in_html(client: TestClient, world: World) -> None:
    secret = world.acme.sessions["admin"]
    form = {"csrf": sessions.csrf_token(secret), "name": "x" * 5000, "role": "viewer"}
    answer = client.post("/console/keys", data=form, headers={"cookie": f"{sessions.COOKIE}={secret}"})
    assert answer.status_code == 422 and answer.headers["content-type"].startswith("text/html")
    assert 'id="refusal"' in answer.text and "name" in answer.text


def test_root_and_sign_in(client: TestClient, world: World) -> None:
    assert client.get("/", follow_redirects=False).headers["location"] == "/console/sign-in"
    cookie = {"cookie": f"{sessions.COOKIE}={world.acme.sessions['viewer']}"}
    assert client.get("/", headers=cookie, follow_redirects=False).headers["location"] == "/console/clusters"
    to_sso = client.get("/console/sign-in?tenant=acme", follow_redirects=False).headers["location"]
    assert to_sso == "/auth/acme/login?next=%2Fconsole%2Fclusters"
    bad = client.get("/console/sign-in?tenant=Not%20a%20tenant")
    assert bad.status_code == 422 and 'id="tenant-error"' in bad.text
    assert client.get("/console/static/../templates/base.html").status_code == 404
    assert client.get("/console/static/console.css").headers["content-type"].startswith("text/css")


def test_a_bearer_key_beside_the_session_is_ignored(client: TestClient, world: World) -> None:
    """The console acts as the browser session only: a foreign tenant's owner key sent in the same
    request neither replaces the session nor adds to it (acme's viewer sees acme's clusters only)."""
    from velyrix.controlplane.auth import principals

    with world.app.state.sessionmaker() as s:
        _, beta_key = principals.issue_key(s, tenant_id=world.beta.id, name="beta-owner-probe", role="owner")
        s.commit()
    headers = {"authorization": f"Bearer {beta_key}"}
    alone = client.get("/console/clusters", headers=headers, follow_redirects=False)
    assert alone.status_code == 303 and alone.headers["location"].startswith("/console/sign-in")
    client.cookies.set(sessions.COOKIE, world.acme.sessions["viewer"])
    try:
        answer = client.get("/console/clusters", headers=headers)
    finally:
        client.cookies.clear()
    assert answer.status_code == 200 and world.acme.cluster_name in answer.text
    assert_no_leak(world, answer.text)
