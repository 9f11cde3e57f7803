"""Hardware MFA over the HTTP API of a real uvicorn server, with ``soft-fido2`` as the security key: a
key is registered and asked at the next login; owner keys and volume deletion need a step-up; TOTP
counts only where the tenant's policy allows it; recovery codes are single use and stored hashed.
Bad assertions (wrong origin, wrong RP ID, a counter going backwards, a replayed challenge, no user
verification for an owner) each answer a 400 with a stable code, change nothing and leave an audit
event."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

import httpx
import pyotp
import pytest
import sqlalchemy as sa

from tests.identity.conftest import Served

soft_fido2 = pytest.importorskip("soft_fido2")


@dataclass
class Person:
    served: Served
    user_id: str
    tenant_id: str
    owner_key: str
    cookie: str

    @property
    def origin(self) -> str:
        return f"http://localhost:{self.served.port}"

    def post(self, path: str, body: Any = None, cookie: str | None = None) -> httpx.Response:
        from velyrix.controlplane.identity import sessions

        secret = cookie or self.cookie
        return httpx.post(
            self.served.url + path,
            json=body if body is not None else {},
            cookies={sessions.COOKIE: secret},
            headers={sessions.CSRF_HEADER: sessions.csrf_token(secret)},
        )

    def session(self, *, mfa: bool) -> str:
        """A new browser session of the user (what a finished login makes)."""
        from velyrix.controlplane.db.models.identity import User
        from velyrix.controlplane.identity import sessions

        with self.served.app.state.sessionmaker() as s:
            _, secret = sessions.start(s, s.get(User, self.user_id), "oidc", mfa=mfa)
            s.commit()
        return secret

    def pending_login(self) -> str:
        """The ``velyrix_mfa`` cookie of a login whose identity provider vouched for the user."""
        from velyrix.controlplane.db.models.identity import IdentityProvider, User
        from velyrix.controlplane.identity import login, mfa_login

        with self.served.app.state.sessionmaker() as s:
            idp = s.scalar(sa.select(IdentityProvider).where(IdentityProvider.tenant_id == self.tenant_id))
            if idp is None:
                idp = IdentityProvider(tenant_id=self.tenant_id, name="corp", kind="oidc", issuer="https://idp.example")
                s.add(idp)
                s.flush()
            flow = login.begin(s, idp, "state-" + secrets.token_urlsafe(16))  # a fresh state per login
            s.flush()
            _, secret = mfa_login.hold(s, flow, s.get(User, self.user_id), "oidc")
            s.commit()
        return secret

    def events(self, action: str) -> list[Any]:
        from velyrix.controlplane.db import models

        with self.served.app.state.sessionmaker() as s:
            return list(s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.action == action)))

    def sign_count(self) -> int:
        from velyrix.controlplane.db.models.identity import MfaCredential

        with self.served.app.state.sessionmaker() as s:
            rows = s.scalars(
                sa.select(MfaCredential).where(MfaCredential.user_id == self.user_id, MfaCredential.kind == "webauthn")
            ).all()
            return int(rows[0].sign_count)


@pytest.fixture
def owner(served: Served) -> Person:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import sessions

    with served.app.state.sessionmaker() as s:
        tenant = models.Tenant(name="acme", display_name="acme")
        s.add(tenant)
        s.flush()
        _, key = principals.issue_key(s, tenant_id=tenant.id, name="acme owner", role="owner")
        user = User(tenant_id=tenant.id, user_name="alice@acme.example", role="owner", groups=[], scim={})
        s.add(user)
        s.flush()
        _, cookie = sessions.start(s, user, "oidc")
        s.commit()
        return Person(served, user.id, tenant.id, key, cookie)


def _register(person: Person) -> Any:
    key = soft_fido2.Fido2Authenticator()
    options = person.post("/auth/mfa/webauthn/register/options")
    assert options.status_code == 200, options.text
    assert options.json()["authenticatorSelection"]["userVerification"] == "required"  # an owner
    made = key.credential_create(options.json() | {"origin": person.origin})
    done = person.post("/auth/mfa/webauthn/register", {"credential": made, "name": "yubikey"})
    assert done.status_code == 201, done.text
    return key


def _assert(person: Person, key: Any, options_path: str, cookie: str | None = None, **override: Any) -> Any:
    options = person.post(options_path, cookie=cookie)
    assert options.status_code == 200, options.text
    uv = override.pop("uv", True)
    return key.credential_request(options.json() | {"origin": person.origin} | override, uv=uv)


def _owner_key(person: Person, cookie: str | None = None) -> httpx.Response:
    return person.post("/v1/api-keys", {"name": "deploy", "role": "owner"}, cookie=cookie)


def _second_step(person: Person, pending: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{person.served.url}/auth/mfa/login", json=body, cookies={"velyrix_mfa": pending})


def test_a_registered_key_is_asked_at_login_and_owner_keys_need_a_step_up(owner: Person) -> None:
    from velyrix.controlplane.identity import sessions

    # a session without a second factor reads, but changes nothing under the default policy
    assert httpx.get(f"{owner.served.url}/v1/clusters", cookies={sessions.COOKIE: owner.cookie}).status_code == 200
    early = owner.post("/v1/api-keys", {"name": "x", "role": "member"})
    assert early.status_code == 403 and early.json()["code"] == "identity_mfa_enrollment_required"
    key = _register(owner)

    pending = owner.pending_login()
    options = httpx.post(f"{owner.served.url}/auth/mfa/login/options", cookies={"velyrix_mfa": pending})
    assert options.status_code == 200, options.text
    made = key.credential_request(options.json() | {"origin": owner.origin})
    done = _second_step(owner, pending, {"credential": made})
    assert done.status_code == 200 and done.json() == {"redirect": "/ui", "second_factor": "webauthn"}, done.text
    cookie = done.cookies[sessions.COOKIE]
    assert _second_step(owner, pending, {"credential": made}).json()["code"] == "identity_mfa_pending_invalid"
    assert owner.events("auth.login")[-1].detail["second_factor"] == "webauthn"

    # a member key needs no step-up; an owner key does, and is made after a fresh assertion
    assert owner.post("/v1/api-keys", {"name": "ci", "role": "member"}, cookie=cookie).status_code == 201
    refused = _owner_key(owner, cookie)
    assert refused.status_code == 403 and refused.json()["code"] == "identity_step_up_required"
    fresh = _assert(owner, key, "/auth/mfa/step-up/options", cookie)
    assert owner.post("/auth/mfa/step-up", {"credential": fresh}, cookie=cookie).status_code == 200
    made_key = _owner_key(owner, cookie)
    assert made_key.status_code == 201 and made_key.json()["role"] == "owner", made_key.text
    # an API key is its own credential: the owner key itself needs no step-up
    by_key = httpx.post(
        f"{owner.served.url}/v1/api-keys",
        json={"name": "k", "role": "owner"},
        headers={"Authorization": f"Bearer {owner.owner_key}"},
    )
    assert by_key.status_code == 201
    assert [e.outcome for e in owner.events("mfa.step_up")] == ["success"]
    assert owner.events("mfa.register")[0].detail["name"] == "yubikey"


def test_deleting_a_volume_needs_a_step_up(owner: Person) -> None:
    key = _register(owner)
    cookie = owner.session(mfa=True)
    body = {"name": "scratch", "region": "us-east-1", "tier": "block", "size_tb": 1}
    made = owner.post("/v1/volumes", body, cookie=cookie)
    assert made.status_code == 201, made.text
    path = f"/v1/volumes/{made.json()['id']}"
    from velyrix.controlplane.identity import sessions

    jar, csrf = {sessions.COOKIE: cookie}, {sessions.CSRF_HEADER: sessions.csrf_token(cookie)}
    refused = httpx.delete(owner.served.url + path, cookies=jar, headers=csrf)
    assert refused.status_code == 403 and refused.json()["code"] == "identity_step_up_required"
    assert httpx.get(owner.served.url + path, cookies=jar).status_code == 200  # still there
    fresh = _assert(owner, key, "/auth/mfa/step-up/options", cookie)
    assert owner.post("/auth/mfa/step-up", {"credential": fresh}, cookie=cookie).status_code == 200
    assert httpx.delete(owner.served.url + path, cookies=jar, headers=csrf).status_code == 204


BAD = {
    "wrong origin": ({"origin": "https://evil.example"}, "identity_mfa_origin_mismatch"),
    "wrong RP ID": ({"rpId": "evil.example"}, "identity_mfa_rp_id_mismatch"),
    "no user verification (owner)": ({"uv": False}, "identity_mfa_user_verification_required"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_assertion_is_refused_and_changes_nothing(owner: Person, case: str) -> None:
    override, code = BAD[case]
    key = _register(owner)
    cookie = owner.session(mfa=True)
    before = owner.sign_count()
    bad = _assert(owner, key, "/auth/mfa/step-up/options", cookie, **dict(override))
    refused = owner.post("/auth/mfa/step-up", {"credential": bad}, cookie=cookie)
    assert refused.status_code == 400 and refused.json()["code"] == code, refused.text
    assert owner.sign_count() == before
    assert _owner_key(owner, cookie).json()["code"] == "identity_step_up_required"  # no step-up granted
    denied = owner.events("mfa.step_up")
    assert [(e.outcome, e.error_code, e.status_code) for e in denied] == [("denied", code, 400)]
    # the same ceremony at login gives no session
    pending = owner.pending_login()
    bad = _assert_pending(owner, key, pending, **dict(override))
    answer = _second_step(owner, pending, {"credential": bad})
    assert answer.status_code == 400 and answer.json()["code"] == code
    assert "velyrix_session" not in answer.cookies
    assert owner.events("mfa.login")[-1].error_code == code


def _assert_pending(person: Person, key: Any, pending: str, **override: Any) -> Any:
    options = httpx.post(f"{person.served.url}/auth/mfa/login/options", cookies={"velyrix_mfa": pending})
    uv = override.pop("uv", True)
    return key.credential_request(options.json() | {"origin": person.origin} | override, uv=uv)


def test_a_counter_going_backwards_is_refused(owner: Person) -> None:
    key = _register(owner)
    cookie = owner.session(mfa=True)
    good = _assert(owner, key, "/auth/mfa/step-up/options", cookie)
    assert owner.post("/auth/mfa/step-up", {"credential": good}, cookie=cookie).status_code == 200
    count = owner.sign_count()
    assert count >= 1
    key.counter = count  # a cloned key: it signs with a count the control plane has seen already
    cloned = _assert(owner, key, "/auth/mfa/step-up/options", cookie)
    refused = owner.post("/auth/mfa/step-up", {"credential": cloned}, cookie=cookie)
    assert refused.status_code == 400 and refused.json()["code"] == "identity_mfa_counter_regressed"
    assert owner.sign_count() == count
    assert owner.events("mfa.step_up")[-1].error_code == "identity_mfa_counter_regressed"


def test_a_replayed_assertion_is_refused(owner: Person) -> None:
    key = _register(owner)
    pending = owner.pending_login()
    made = _assert_pending(owner, key, pending)
    assert _second_step(owner, pending, {"credential": made}).status_code == 200
    count = owner.sign_count()
    # the same signed answer again, at a new login and as a step-up: its challenge is spent
    again = _second_step(owner, owner.pending_login(), {"credential": made})
    assert again.status_code == 400 and again.json()["code"] == "identity_mfa_challenge_invalid"
    assert "velyrix_session" not in again.cookies
    cookie = owner.session(mfa=True)
    replay = owner.post("/auth/mfa/step-up", {"credential": made}, cookie=cookie)
    assert replay.status_code == 400 and replay.json()["code"] == "identity_mfa_challenge_invalid"
    assert owner.sign_count() == count
    assert {e.error_code for e in owner.events("mfa.login") if e.outcome == "denied"} == {
        "identity_mfa_challenge_invalid"
    }


def test_totp_only_where_the_policy_allows_it(owner: Person) -> None:
    refused = owner.post("/auth/mfa/totp/enroll", cookie=owner.session(mfa=True))
    assert refused.status_code == 403 and refused.json()["code"] == "identity_mfa_totp_not_allowed"
    auth = {"Authorization": f"Bearer {owner.owner_key}"}
    assert httpx.get(f"{owner.served.url}/v1/identity-policy", headers=auth).json()["totp_allowed"] is False
    policy = httpx.put(f"{owner.served.url}/v1/identity-policy", json={"totp_allowed": True}, headers=auth)
    assert policy.status_code == 200 and policy.json()["totp_allowed"] is True, policy.text
    cookie = owner.session(mfa=True)
    totp = pyotp.TOTP(owner.post("/auth/mfa/totp/enroll", cookie=cookie).json()["secret"])
    wrong = owner.post("/auth/mfa/totp/confirm", {"code": "12345678"}, cookie=cookie)
    assert wrong.status_code == 400 and wrong.json()["code"] == "identity_mfa_totp_invalid"
    # confirmed with the previous 30 s step's code (accepted; a second try if the step turned meanwhile)
    for _ in range(2):
        confirmed = owner.post("/auth/mfa/totp/confirm", {"code": totp.at(time.time() - 30)}, cookie=cookie)
        if confirmed.status_code == 200:
            break
    assert confirmed.status_code == 200, confirmed.text
    code = totp.now()
    ok = _second_step(owner, owner.pending_login(), {"totp": code})
    assert ok.status_code == 200 and ok.json()["second_factor"] == "totp", ok.text
    replay = _second_step(owner, owner.pending_login(), {"totp": code})
    assert replay.status_code == 400 and replay.json()["code"] == "identity_mfa_totp_invalid"
    # the policy taken back: TOTP no longer counts
    assert httpx.put(f"{owner.served.url}/v1/identity-policy", json={"totp_allowed": False}, headers=auth).is_success
    late = _second_step(owner, owner.pending_login(), {"totp": totp.now()})
    assert late.status_code == 403 and late.json()["code"] == "identity_mfa_totp_not_allowed"


def test_recovery_codes_are_single_use_and_stored_hashed(owner: Person) -> None:
    from velyrix.controlplane.db.models.identity import MfaCredential

    key = _register(owner)
    cookie = owner.session(mfa=True)
    refused = owner.post("/auth/mfa/recovery-codes", cookie=cookie)
    assert refused.json()["code"] == "identity_step_up_required"
    fresh = _assert(owner, key, "/auth/mfa/step-up/options", cookie)
    assert owner.post("/auth/mfa/step-up", {"credential": fresh}, cookie=cookie).status_code == 200
    codes = owner.post("/auth/mfa/recovery-codes", cookie=cookie).json()["codes"]
    assert len(codes) == 10 and len(set(codes)) == 10
    with owner.served.app.state.sessionmaker() as s:
        stored = [r.secret for r in s.scalars(sa.select(MfaCredential).where(MfaCredential.kind == "recovery"))]
    assert len(stored) == 10 and not set(codes) & set(stored)
    done = _second_step(owner, owner.pending_login(), {"recovery_code": codes[0]})
    assert done.status_code == 200 and done.json()["second_factor"] == "recovery_code"
    again = _second_step(owner, owner.pending_login(), {"recovery_code": codes[0]})
    assert again.status_code == 400 and again.json()["code"] == "identity_mfa_recovery_invalid"
