"""SCIM 2.0 of a tenant against a real server: the ``scim2-tester`` conformance checker passes every check;
Okta and Entra PATCH shapes; deactivating a user answers 401 on the very next request of their browser
session and API keys; groups map to roles; bad payloads are 4xx SCIM errors that change nothing; searches
read the directory in a worker thread, never on the server's event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.identity.conftest import Served


@pytest.fixture
def scim(served: Served) -> Iterator[tuple[Served, str, str]]:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models

    with served.app.state.sessionmaker() as s:
        tenant = models.Tenant(name="acme", display_name="acme")
        s.add(tenant)
        s.flush()
        _, scim_key = principals.issue_key(s, tenant_id=tenant.id, name="okta scim", role="scim")
        _, owner = principals.issue_key(s, tenant_id=tenant.id, name="owner", role="owner")
        s.commit()
    yield served, scim_key, owner


def test_scim2_tester_passes_every_check(scim: tuple[Served, str, str]) -> None:
    httpx2 = pytest.importorskip("httpx2")
    from scim2_client.engines.httpx2 import SyncSCIMClient
    from scim2_tester import Status, check_server

    served, key, _ = scim
    with httpx2.Client(base_url=f"{served.url}/scim/v2", headers={"Authorization": f"Bearer {key}"}) as http:
        results = check_server(SyncSCIMClient(http))
    failed = [(r.title, r.resource_type, r.reason) for r in results if r.status not in (Status.SUCCESS, Status.SKIPPED)]
    assert len(results) > 20
    assert not failed, "\n".join(map(str, failed))


USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


def _h(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/scim+json"}


def _session_of(served: Served, user_id: str) -> str:
    """A browser session of the user who proved a second factor (what an SSO login with a security key
    makes: identity.sessions.start)."""
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import sessions

    with served.app.state.sessionmaker() as s:
        user = s.get(User, user_id)
        _, secret = sessions.start(s, user, "oidc", mfa=True)
        s.commit()
        return secret


def test_deactivation_answers_401_on_the_next_request_and_groups_map_to_roles(scim: tuple[Served, str, str]) -> None:
    from velyrix.controlplane.identity import sessions

    served, key, owner = scim
    url = f"{served.url}/scim/v2"
    idp = {"name": "okta", "kind": "oidc", "issuer": "https://okta.example", "client_id": "c"}
    made = httpx.post(
        f"{served.url}/v1/identity-providers", json=idp | {"group_map": {"gpu-admins": "admin"}}, headers=_h(owner)
    )
    assert made.status_code == 201, made.text
    user = httpx.post(
        f"{url}/Users",
        json={"schemas": [USER], "userName": "Alice@acme.example", "externalId": "00u1"},
        headers=_h(key),
    )
    assert user.status_code == 201, user.text
    uid = user.json()["id"]
    cookie = _session_of(served, uid)
    jar = {sessions.COOKIE: cookie}
    csrf = {sessions.CSRF_HEADER: sessions.csrf_token(cookie)}
    assert httpx.get(f"{served.url}/v1/clusters", cookies=jar).status_code == 200
    assert httpx.get(f"{served.url}/v1/api-keys", cookies=jar).status_code == 403  # viewer

    group = httpx.post(
        f"{url}/Groups",
        json={"schemas": [GROUP], "displayName": "gpu-admins", "members": [{"value": uid}]},
        headers=_h(key),
    )
    assert group.status_code == 201, group.text
    assert httpx.get(f"{served.url}/v1/api-keys", cookies=jar).status_code == 200  # admin through the group
    minted = httpx.post(
        f"{served.url}/v1/api-keys", json={"name": "laptop", "role": "member"}, cookies=jar, headers=csrf
    )
    assert minted.status_code == 201, minted.text
    user_key = minted.json()["secret"]
    assert httpx.get(f"{served.url}/v1/clusters", headers=_h(user_key)).status_code == 200

    # Microsoft Entra's shape: capitalised op, "False" as a string
    entra = {"schemas": [PATCH], "Operations": [{"op": "Replace", "path": "active", "value": "False"}]}
    patched = httpx.patch(f"{url}/Users/{uid}", json=entra, headers=_h(key))
    assert patched.status_code == 200 and patched.json()["active"] is False, patched.text
    assert httpx.get(f"{served.url}/v1/clusters", cookies=jar).status_code == 401
    assert httpx.get(f"{served.url}/v1/clusters", headers=_h(user_key)).status_code == 401
    # Okta's shape: a value object without a path; the user may come back, the old credentials do not
    okta = {"schemas": [PATCH], "Operations": [{"op": "replace", "value": {"active": True}}]}
    assert httpx.patch(f"{url}/Users/{uid}", json=okta, headers=_h(key)).json()["active"] is True
    assert httpx.get(f"{served.url}/v1/clusters", cookies=jar).status_code == 401
    assert httpx.get(f"{served.url}/v1/clusters", headers=_h(user_key)).status_code == 401

    found = httpx.get(f"{url}/Users", params={"filter": 'externalId eq "00u1"'}, headers=_h(key)).json()
    assert found["totalResults"] == 1 and found["Resources"][0]["userName"] == "Alice@acme.example"
    with served.app.state.sessionmaker() as s:
        from velyrix.controlplane.db import models

        actions = set(s.scalars(sa.select(models.AuditEvent.action).where(models.AuditEvent.action.like("scim.%"))))
    assert {"scim.create", "scim.patch"} <= actions


def test_bad_scim_payloads_are_4xx_scim_errors_that_change_nothing(scim: tuple[Served, str, str]) -> None:
    served, key, owner = scim
    url = f"{served.url}/scim/v2"
    assert httpx.post(f"{url}/Users", json={"schemas": [USER], "userName": "bob"}, headers=_h(key)).status_code == 201
    bad = {
        "conflicting userName": ({"schemas": [USER], "userName": "BOB"}, 409, "uniqueness"),
        "wrong type": ({"schemas": [USER], "userName": "carol", "active": "maybe"}, 400, "invalidValue"),
        "wrong type of a list": ({"schemas": [USER], "userName": "carol", "emails": "c@x"}, 400, "invalidValue"),
        "huge list": (
            {"schemas": [USER], "userName": "carol", "emails": [{"value": f"c{i}@acme.example"} for i in range(40000)]},
            413,
            "tooMany",
        ),
        "not an object": ([1, 2], 400, "invalidSyntax"),
        "no userName": ({"schemas": [USER]}, 400, None),
    }
    for what, (body, status, scim_type) in bad.items():
        resp = httpx.post(f"{url}/Users", json=body, headers=_h(key))
        assert resp.status_code == status, (what, resp.text)
        error = resp.json()
        assert error["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"] and error["status"] == str(status)
        if scim_type:
            assert error.get("scimType") == scim_type, (what, error)
    unknown = httpx.post(f"{url}/Users", json={"schemas": [USER], "userName": "dan", "shoeSize": 44}, headers=_h(key))
    assert unknown.status_code in (201, 400), unknown.text
    if unknown.status_code == 201:  # accepted as the RFC allows, but never stored nor echoed
        assert "shoeSize" not in unknown.json()
    listed = httpx.get(f"{url}/Users", headers=_h(key)).json()
    assert {u["userName"] for u in listed["Resources"]} <= {"bob", "dan"}
    assert httpx.get(f"{url}/Users", headers=_h(owner)).status_code == 200  # owners hold scim:provision
    viewer_like = httpx.get(f"{url}/Users", headers={"Authorization": "Bearer vlx_nope"})
    assert viewer_like.status_code == 401
    with served.app.state.sessionmaker() as s:
        from velyrix.controlplane.db import models

        denied = list(s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.outcome == "denied")))
    assert len([e for e in denied if e.action == "scim.create"]) >= len(bad)


SEARCH = "urn:ietf:params:scim:api:messages:2.0:SearchRequest"


def _on_loop_statements(served: Served, call: Any) -> list[str]:
    """The SQL statements run on a thread that has a running asyncio loop while ``call()`` runs."""
    engine = served.app.state.sessionmaker.kw["bind"]
    seen: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        if asyncio._get_running_loop() is not None:
            seen.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)
    return seen


def test_scim_searches_read_the_directory_off_the_event_loop(scim: tuple[Served, str, str]) -> None:
    served, key, _ = scim
    with httpx.Client(base_url=f"{served.url}/scim/v2", headers=_h(key)) as http:
        made = http.post("/Users", json={"schemas": [USER], "userName": "ada@acme.example", "active": True})
        assert made.status_code == 201, made.text
        group = http.post("/Groups", json={"schemas": [GROUP], "displayName": "ml-eng"})
        assert group.status_code == 201, group.text
        answers: list[httpx.Response] = []

        def searches() -> None:
            body = {"schemas": [SEARCH], "filter": 'userName eq "ada@acme.example"'}
            answers.append(http.post("/Users/.search", json=body))
            answers.append(http.post("/.search", json={"schemas": [SEARCH]}))

        on_loop = _on_loop_statements(served, searches)
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    assert answers[0].json()["totalResults"] == 1 and answers[1].json()["totalResults"] == 2
    assert on_loop == [], on_loop
