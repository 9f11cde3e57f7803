"""The tenant admin pages on SQLite and PostgreSQL (``world``): incidents with their timers and the NOC's
notes, the audit log's filters (as the API's) and its tamper-evident check, the sanitization certificates
verified on the page and with ``velyrix verify sanitization``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.console.conftest import World
from velyrix.controlplane.identity import sessions


@pytest.fixture(scope="module")
def client(world: World) -> Any:
    with TestClient(world.app, base_url="https://testserver") as c:
        yield c


def get(client: TestClient, world: World, path: str, role: str = "owner", **params: Any) -> Any:
    headers = {"cookie": f"{sessions.COOKIE}={world.acme.sessions[role]}"}
    return client.get(path, params=params, headers=headers, follow_redirects=False)


def test_incidents_show_priority_state_timers_and_the_nocs_notes(client: TestClient, world: World) -> None:
    listed = get(client, world, "/console/incidents", "viewer")
    assert listed.status_code == 200 and world.acme.admin["incident_title"] in listed.text
    assert "P1" in listed.text and "acknowledged" in listed.text
    # opened 20 min ago, acknowledged after 8 (the default contract's P1 first response: 15 min)
    assert re.search(r"first response: after 8 min \(target 15 min\)", listed.text), listed.text
    opened = [int(m) for m in re.findall(r"open for: (\d+) min", listed.text)]  # the seeded one: 20 min at least
    assert opened and max(opened) >= 20, listed.text
    page = get(client, world, f"/console/incidents/{world.acme.admin['incident_id']}", "viewer")
    assert page.status_code == 200 and world.acme.admin["incident_note"] in page.text
    update = re.search(r"updates: last (\d+) min ago \(every 30 min\)", page.text)  # the note, 10 min ago then
    assert update and int(update.group(1)) >= 10, page.text
    narrowed = get(client, world, "/console/incidents", "viewer", state="resolved")
    assert narrowed.status_code == 200 and world.acme.admin["incident_title"] not in narrowed.text
    bad = get(client, world, "/console/incidents", "viewer", state="closed")
    assert bad.status_code == 422 and 'aria-describedby="incidents-state-error"' in bad.text


def _console_event(client: TestClient, world: World) -> None:
    secret = world.acme.sessions["admin"]
    made = client.post(
        "/console/keys",
        data={"csrf": sessions.csrf_token(secret), "name": "audit-filter-key", "role": "viewer"},
        headers={"cookie": f"{sessions.COOKIE}={secret}"},
    )
    assert made.status_code == 201
    refused = client.post(
        "/console/keys",
        data={"csrf": sessions.csrf_token(secret), "name": "", "role": "viewer"},
        headers={"cookie": f"{sessions.COOKIE}={secret}"},
    )
    assert refused.status_code == 422


def test_the_audit_log_filters_as_the_api_does(client: TestClient, world: World) -> None:
    _console_event(client, world)
    page = get(client, world, "/console/audit", action="console.*")
    assert page.status_code == 200
    actions = re.findall(r"<td><code>([a-z_.]+)</code></td>", page.text)
    assert actions and all(a.startswith("console.") for a in actions) and "console.api_keys.create" in actions
    api = get(client, world, "/v1/audit-events", action="console.*", actor="ADMIN@acme")
    assert api.status_code == 200
    items = api.json()["items"]
    assert items and all(e["action"].startswith("console.") and "admin@acme" in e["actor"] for e in items)
    latest = max(e["at"] for e in items)
    after = get(client, world, "/v1/audit-events", action="console.*", since=latest).json()["items"]
    assert after and all(e["at"] >= latest for e in after)
    assert not get(client, world, "/v1/audit-events", action="console.*", until="2000-01-01T00:00").json()["items"]
    by_outcome = get(client, world, "/console/audit", outcome="denied", actor="admin@acme")
    outcomes = re.findall(r'<td class="outcome">(\w+)</td>', by_outcome.text)
    assert by_outcome.status_code == 200 and outcomes and set(outcomes) == {"denied"}
    bad = get(client, world, "/console/audit", since="yesterday", until="2026-01-01T00:00")
    assert bad.status_code == 422 and 'id="audit-since-error"' in bad.text
    order = get(client, world, "/console/audit", since="2026-12-02T00:00", until="2026-12-01T00:00")
    assert order.status_code == 422 and 'id="audit-until-error"' in order.text
    denied = get(client, world, "/console/audit", "member")
    assert denied.status_code == 403  # members have no audit:read


def test_the_audit_log_verification_names_an_edited_event(client: TestClient, world: World) -> None:
    from velyrix.controlplane.db import models

    _console_event(client, world)
    holds = get(client, world, "/console/audit/verify")
    assert holds.status_code == 200 and "Log holds:" in holds.text, holds.text
    engine = world.app.state.engine
    with engine.begin() as conn:  # what a database administrator could do: the module's own database
        if engine.dialect.name == "postgresql":
            conn.execute(sa.text("DROP TRIGGER audit_events_no_update_delete ON audit_events"))
        else:
            conn.execute(sa.text("DROP TRIGGER audit_events_no_update"))
    table = models.AuditEvent
    with world.app.state.sessionmaker() as s:
        victim = s.scalars(sa.select(table).where(table.tenant_id == world.acme.id).order_by(table.id).limit(1)).one()
        victim_id, actor = victim.id, victim.actor
    edit = sa.update(table).where(table.id == victim_id)
    with engine.begin() as conn:
        conn.execute(edit.values(actor="someone-else"))
    try:
        broken = get(client, world, "/console/audit/verify")
        assert broken.status_code == 200 and "TAMPERED" in broken.text and victim_id in broken.text, broken.text
    finally:
        with engine.begin() as conn:
            conn.execute(edit.values(actor=actor))
    assert "Log holds:" in get(client, world, "/console/audit/verify").text


def test_sanitization_certificates_are_verified_and_download_for_the_cli(
    client: TestClient, world: World, tmp_path: Path
) -> None:
    from velyrix.cli.main import app
    from velyrix.controlplane.db.models import evidence
    from velyrix.controlplane.reconcile import signing

    cert_id = world.acme.admin["certificate_id"]
    page = get(client, world, "/console/sanitization", "viewer")
    assert page.status_code == 200 and f'id="cert-{cert_id}"' in page.text
    assert "valid: " in page.text and "INVALID" not in page.text and "purge" in page.text
    file = get(client, world, f"/console/sanitization/{cert_id}.json", "viewer")
    assert file.status_code == 200 and "attachment" in file.headers["content-disposition"]
    path = tmp_path / "cert.json"
    path.write_bytes(file.content)
    key = signing.public_key_b64("us-east-1")
    ok = CliRunner().invoke(app, ["verify", "sanitization", str(path), "--public-key", key])
    assert ok.exit_code == 0 and "valid" in ok.output, ok.output
    forged = json.loads(file.content)
    forged["report"]["verification"]["passed"] = not forged["report"]["verification"]["passed"]
    path.write_text(json.dumps(forged))
    assert CliRunner().invoke(app, ["verify", "sanitization", str(path), "--public-key", key]).exit_code == 1
    with world.app.state.sessionmaker() as s:  # a forged certificate among the tenant's (the table only grows)
        row = s.get(evidence.SanitizationCertificate, cert_id)
        s.add(
            evidence.SanitizationCertificate(
                tenant_id=row.tenant_id,
                cluster_id=row.cluster_id,
                subject_kind="node",
                subject="forged",
                document=forged,
            )
        )
        s.commit()
    shown = get(client, world, "/console/sanitization", "viewer")
    assert shown.text.count("INVALID: ") == 1 and shown.text.count("valid: ") == 1


def _post_role(client: TestClient, world: World, user_id: str, role: str) -> Any:
    secret = world.acme.sessions["owner"]
    return client.post(
        f"/console/members/{user_id}/role",
        data={"csrf": sessions.csrf_token(secret), "role": role},
        headers={"cookie": f"{sessions.COOKIE}={secret}"},
        follow_redirects=False,
    )


def _role_events(world: World, user_id: str) -> list[tuple[str, str, int]]:
    from velyrix.controlplane.db import models

    table = models.AuditEvent
    with world.app.state.sessionmaker() as s:
        mine = sa.or_(table.target == f"users/{user_id}", table.target.contains(user_id))
        rows = s.scalars(sa.select(table).where(table.action == "console.users.update", mine).order_by(table.id))
        return [(e.action, e.outcome, e.status_code) for e in rows]


def test_members_show_roles_and_second_factors_and_an_owner_changes_a_role(client: TestClient, world: World) -> None:
    from tests.console import admin_seed
    from velyrix.controlplane.db.models.identity import MfaCredential, User

    provisioned = world.acme.admin["user_id"]
    with world.app.state.sessionmaker() as s:
        admin = s.scalars(sa.select(User).where(User.user_name == "admin@acme.example")).one()
        s.add(MfaCredential(user_id=admin.id, kind="webauthn", credential_id="cred-1", public_key="pk", name="key"))
        s.commit()
    viewer = get(client, world, "/console/members", "viewer")
    assert viewer.status_code == 200 and "provisioned@acme.example" in viewer.text
    row = re.search(rf'<tr id="member-{admin.id}">(.*?)</tr>', viewer.text, re.S)
    assert row and "webauthn (1 security key)" in row.group(1) and ">admin<" in row.group(1)
    assert "SCIM" in viewer.text and "Change role" not in viewer.text  # only owners change roles
    assert "Change role" in get(client, world, "/console/members").text
    # a browser session needs a fresh step-up: refused beside the member's role, nothing changed
    stale = _post_role(client, world, provisioned, "viewer")
    assert stale.status_code == 403 and f'id="role-{provisioned}-error"' in stale.text and "step-up" in stale.text
    admin_seed.step_up(world.app, world.acme.sessions["owner"])
    bad = _post_role(client, world, provisioned, "root")
    assert bad.status_code == 422 and f'aria-describedby="role-{provisioned}-error"' in bad.text
    done = _post_role(client, world, provisioned, "viewer")
    assert done.status_code == 303 and done.headers["location"] == f"/console/members?changed={provisioned}"
    api = get(client, world, f"/v1/users/{provisioned}", "viewer")
    assert api.status_code == 200 and api.json()["role"] == "viewer" and api.json()["provisioned_by"] == "scim"
    assert _role_events(world, provisioned) == [
        ("console.users.update", "denied", 403),
        ("console.users.update", "denied", 422),
        ("console.users.update", "success", 200),
    ]
    with world.app.state.sessionmaker() as s:
        owner = s.scalars(sa.select(User).where(User.user_name == "owner@acme.example")).one()
    last = _post_role(client, world, owner.id, "admin")  # the tenant's only owner keeps the role
    assert last.status_code == 409 and "last active owner" in last.text and f'id="role-{owner.id}-error"' in last.text
    listed = get(client, world, "/v1/users", "viewer").json()["items"]
    assert {u["user_name"] for u in listed} >= {"owner@acme.example", "provisioned@acme.example"}
    assert not any("beta" in u["user_name"] for u in listed)


def _post(client: TestClient, world: World, path: str, role: str = "owner", **form: str) -> Any:
    secret = world.acme.sessions[role]
    return client.post(
        path,
        data={"csrf": sessions.csrf_token(secret), **form},
        headers={"cookie": f"{sessions.COOKIE}={secret}"},
        follow_redirects=False,
    )


def _actions(world: World, prefix: str) -> list[tuple[str, str]]:
    from velyrix.controlplane.db import models

    table = models.AuditEvent
    with world.app.state.sessionmaker() as s:
        rows = s.scalars(sa.select(table).where(table.action.startswith(prefix)).order_by(table.id))
        return [(e.action, e.outcome) for e in rows]


def test_sso_settings_show_the_provider_never_its_secret_and_edit_through_the_api(
    client: TestClient, world: World
) -> None:
    from tests.console.admin_seed import CLIENT_SECRET

    admin = world.acme.admin
    seen = get(client, world, "/console/identity", "viewer")
    assert seen.status_code == 200 and admin["provider_issuer"] in seen.text and admin["client_id"] in seen.text
    assert "acme.example" in seen.text and "gpu-admins &rarr; admin" in seen.text
    assert "Add an identity provider" not in seen.text  # viewers read only
    form = {"name": "corp", "kind": "oidc", "issuer": "https://corp.example", "client_secret": "s3cret-typed-once"}
    missing = _post(client, world, "/console/identity/providers", **form, group_map="gpu-admins=root")
    assert missing.status_code == 422 and 'id="idp-group_map-error"' in missing.text and "root" in missing.text
    no_client = _post(client, world, "/console/identity/providers", **form)
    assert no_client.status_code == 422 and 'id="idp-client_id-error"' in no_client.text
    bad_name = _post(client, world, "/console/identity/providers", **{**form, "name": "Not A Name", "client_id": "c"})
    assert bad_name.status_code == 422 and 'id="idp-name-error"' in bad_name.text
    for page in (missing, no_client, bad_name):
        assert "s3cret-typed-once" not in page.text  # never put back in the page
    made = _post(client, world, "/console/identity/providers", **form, client_id="corp-client", group_map="ops=admin")
    assert made.status_code == 303
    owner_view = get(client, world, "/console/identity")
    assert "https://corp.example" in owner_view.text and "ops &rarr; admin" in owner_view.text
    for page in (seen, owner_view):
        assert CLIENT_SECRET not in page.text and "s3cret-typed-once" not in page.text
    provider_id = re.search(r'<tr id="provider-(idp_[0-9a-f]+)">\s*<td>corp</td>', owner_view.text)
    assert provider_id
    gone = _post(client, world, f"/console/identity/providers/{provider_id.group(1)}/delete")
    assert gone.status_code == 303 and "https://corp.example" not in get(client, world, "/console/identity").text
    assert _actions(world, "console.identity_providers.") == [
        ("console.identity_providers.create", "denied"),
        ("console.identity_providers.create", "denied"),
        ("console.identity_providers.create", "denied"),
        ("console.identity_providers.create", "success"),
        ("console.identity_providers.delete", "success"),
    ]


def test_a_scim_token_is_shown_once_provisions_and_is_revoked(client: TestClient, world: World) -> None:
    made = _post(client, world, "/console/identity/scim-tokens", name="okta-scim")
    assert made.status_code == 201, made.text
    secret = re.search(r'<code id="scim-secret">(vlx_[^<]+)</code>', made.text)
    assert secret
    bearer = {"authorization": f"Bearer {secret.group(1)}"}
    assert client.get("/scim/v2/Users", headers=bearer).status_code == 200
    page = get(client, world, "/console/identity")
    assert secret.group(1) not in page.text and "okta-scim" in page.text  # shown once only
    token_id = re.search(r'<tr id="scim-(key_[0-9a-f]+)">\s*<td>okta-scim</td>', page.text)
    assert token_id
    assert _post(client, world, "/console/identity/scim-tokens", "admin", name="x").status_code == 403
    assert 'id="add-scim-token"' not in get(client, world, "/console/identity", "admin").text
    not_scim = _post(client, world, f"/console/identity/scim-tokens/{world.acme.key_id}/revoke")
    assert not_scim.status_code == 404  # a key of another role is not a SCIM token
    assert _post(client, world, f"/console/identity/scim-tokens/{token_id.group(1)}/revoke").status_code == 303
    assert client.get("/scim/v2/Users", headers=bearer).status_code == 401
    assert ("console.scim_tokens.revoke", "success") in _actions(world, "console.scim_tokens.")


def test_the_mfa_policy_is_set_through_the_api_with_errors_beside_the_field(client: TestClient, world: World) -> None:
    bad = _post(client, world, "/console/identity/policy", mfa_required="on", step_up_s="10")
    assert bad.status_code == 422 and 'id="policy-step_up_s-error"' in bad.text
    assert _post(client, world, "/console/identity/policy", "admin", mfa_required="on").status_code == 403
    done = _post(client, world, "/console/identity/policy", mfa_required="on", step_up_s="600")
    assert done.status_code == 303
    api = get(client, world, "/v1/identity-policy", "viewer").json()
    assert api["step_up_s"] == 600 and api["mfa_required"] is True
    assert "<dd>600 s</dd>" in get(client, world, "/console/identity", "viewer").text
    assert _actions(world, "console.identity_policy.") == [
        ("console.identity_policy.set", "denied"),  # the step-up window out of range
        ("console.identity_policy.set", "denied"),  # an admin's attempt
        ("console.identity_policy.set", "success"),
    ]
