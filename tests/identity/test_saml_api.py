"""SAML single sign-on at the API level against the test IdP of ``saml_idp`` (pysaml2 signing with
xmlsec1): a signed assertion answering Velyrix's AuthnRequest signs the user in with the role its groups
map to; every bad response (signature stripped or wrapped, content changed after signing, another key,
expired, wrong audience, recipient or destination, replayed, unsolicited) answers 401 with its stable
code, makes no session and leaves a denied ``auth.login`` audit event."""

from __future__ import annotations

import base64
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.identity.conftest import Served
from tests.identity.saml_idp import Idp, make_key, read_request, saml_idp

USERS = {
    "alice@acme.example": {"name": "Alice", "groups": ["gpu-admins"]},
    "bob@acme.example": {"name": "Bob", "groups": []},
    "mallory@acme.example": {"name": "Mallory", "groups": ["gpu-admins"]},
}


def make_tenant(app: Any, name: str) -> str:
    """A tenant called ``name`` and the secret of its owner key."""
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models

    with app.state.sessionmaker() as s:
        tenant = models.Tenant(name=name, display_name=name)
        s.add(tenant)
        s.flush()
        _, secret = principals.issue_key(s, tenant_id=tenant.id, name=f"{name} owner", role="owner")
        s.commit()
        return secret


def add_provider(url: str, owner_key: str, idp: Idp) -> str:
    """The id of the tenant's SAML identity provider ``corp`` (made through the API)."""
    body = {
        "name": "corp",
        "kind": "saml",
        "issuer": idp.entity_id,
        "saml_metadata": idp.metadata(),
        "allowed_domains": ["acme.example"],
        "group_map": {"gpu-admins": "owner"},
        "default_role": "viewer",
    }
    made = httpx.post(f"{url}/v1/identity-providers", json=body, headers={"Authorization": f"Bearer {owner_key}"})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


@dataclass
class Flow:
    """A login started at Velyrix: the AuthnRequest's id, the ACS and the SP entity id it names."""

    request_id: str
    acs: str
    audience: str


@dataclass
class Saml:
    served: Served
    idp: Idp
    provider: str

    def start(self) -> Flow:
        resp = httpx.get(f"{self.served.url}/auth/saml/{self.provider}/login", follow_redirects=False)
        assert resp.status_code == 303 and resp.headers["location"].startswith(self.idp.url + "/sso?")
        request = read_request(resp.headers["location"])
        return Flow(request.id, request.assertion_consumer_service_url, request.issuer.text)

    def respond(self, flow: Flow, email: str = "alice@acme.example", **opt: Any) -> str:
        given = {"acs": flow.acs, "audience": flow.audience, "in_response_to": flow.request_id, **opt}
        return self.idp.respond(email, **given)

    def post(self, flow: Flow, saml_response: str) -> httpx.Response:
        return httpx.post(flow.acs, data={"SAMLResponse": saml_response}, follow_redirects=False)

    def sessions(self) -> int:
        from velyrix.controlplane.db.models.identity import UserSession

        with self.served.app.state.sessionmaker() as s:
            return int(s.scalar(sa.select(sa.func.count()).select_from(UserSession)) or 0)

    def denied(self, code: str) -> list[Any]:
        from velyrix.controlplane.db import models

        with self.served.app.state.sessionmaker() as s:
            stmt = sa.select(models.AuditEvent).where(
                models.AuditEvent.action == "auth.login", models.AuditEvent.error_code == code
            )
            return list(s.scalars(stmt))


@pytest.fixture
def saml(served: Served, tmp_path: Path) -> Iterator[Saml]:
    if shutil.which("xmlsec1") is None:
        pytest.skip("needs Debian's xmlsec1 (scripts/apt-packages.txt)")
    owner = make_tenant(served.app, "acme")
    with saml_idp(tmp_path, USERS) as idp:
        yield Saml(served, idp, add_provider(served.url, owner, idp))


def test_a_signed_assertion_signs_the_user_in_with_the_role_of_its_groups(saml: Saml) -> None:
    flow = saml.start()
    resp = saml.post(flow, saml.respond(flow))
    assert resp.status_code == 303 and resp.headers["location"] == "/ui", resp.text
    cookie = resp.cookies.get("velyrix_session")
    assert cookie
    page = httpx.get(f"{saml.served.url}/ui", cookies={"velyrix_session": cookie})
    assert page.status_code == 200 and "alice@acme.example" in page.text and "(owner)" in page.text
    bob = saml.start()
    resp = saml.post(bob, saml.respond(bob, "bob@acme.example"))
    page = httpx.get(f"{saml.served.url}/ui", cookies={"velyrix_session": resp.cookies["velyrix_session"]})
    assert "(viewer)" in page.text  # no mapped group: the default role
    assert saml.sessions() == 2


SIGNATURE = r"<(\w+:)?Signature[ >].*?</\1Signature>"


def _strip_signature(xml: str) -> str:
    return re.sub(SIGNATURE, "", xml, flags=re.S)


def _b64(xml: str) -> str:
    return base64.b64encode(xml.encode()).decode()


def _evil(saml: Saml, flow: Flow) -> str:
    """An unsigned assertion for mallory (owner by her group), as an attacker would write it."""
    return saml.idp.assertion_xml(
        "mallory@acme.example", acs=flow.acs, audience=flow.audience, in_response_to=flow.request_id
    )


def _response(saml: Saml, flow: Flow, assertions: str) -> str:
    return _b64(saml.idp.response_xml(assertions, acs=flow.acs, in_response_to=flow.request_id))


def _signed_bob(saml: Saml, flow: Flow) -> str:
    return saml.idp.sign(
        saml.idp.assertion_xml("bob@acme.example", acs=flow.acs, audience=flow.audience, in_response_to=flow.request_id)
    )


def _stripped(saml: Saml, flow: Flow) -> str:
    return _response(saml, flow, _strip_signature(_signed_bob(saml, flow)))


def _second_assertion(saml: Saml, flow: Flow) -> str:
    return _response(saml, flow, _evil(saml, flow) + _signed_bob(saml, flow))


def _signed_moved(saml: Saml, flow: Flow) -> str:
    hidden = "<samlp:Extensions>" + _signed_bob(saml, flow) + "</samlp:Extensions>"
    return _response(saml, flow, hidden + _evil(saml, flow))


def _signature_copied(saml: Saml, flow: Flow) -> str:
    signature = re.search(SIGNATURE, _signed_bob(saml, flow), flags=re.S)
    assert signature
    evil = _evil(saml, flow)
    at = evil.index("</saml:Issuer>") + len("</saml:Issuer>")
    return _response(saml, flow, evil[:at] + signature.group(0) + evil[at:])


def _changed_after_signing(saml: Saml, flow: Flow) -> str:
    signed = _signed_bob(saml, flow).replace("bob@acme.example", "mallory@acme.example")
    assert "mallory" in signed
    return _response(saml, flow, signed)


def _other_key(saml: Saml, flow: Flow) -> str:
    (saml.idp.key_file.parent / "forger").mkdir(exist_ok=True)
    key_file, cert = make_key(saml.idp.key_file.parent / "forger")
    forger = Idp(saml.idp.entity_id, key_file, cert, USERS, saml.idp.url)
    given = {"acs": flow.acs, "audience": flow.audience, "in_response_to": flow.request_id}
    return forger.respond("mallory@acme.example", **given, embed_cert=True)  # its own certificate in KeyInfo


BAD: dict[str, tuple[Callable[[Saml, Flow], str], str]] = {
    "signature stripped": (_stripped, "identity_saml_unsigned"),
    "never signed": (lambda s, f: s.respond(f, signed=False), "identity_saml_unsigned"),
    "second unsigned assertion inserted": (_second_assertion, "identity_saml_signature_wrapping"),
    "signed assertion moved into Extensions": (_signed_moved, "identity_saml_signature_wrapping"),
    "signature copied onto another assertion": (_signature_copied, "identity_saml_signature_wrapping"),
    "content changed after signing": (_changed_after_signing, "identity_saml_signature_invalid"),
    "signed by another key": (_other_key, "identity_saml_signature_invalid"),
    "signed with RSA-SHA1": (lambda s, f: s.respond(f, sha1=True), "identity_saml_weak_algorithm"),
    "expired": (lambda s, f: s.respond(f, shift_s=-900), "identity_saml_expired"),
    "not yet valid": (lambda s, f: s.respond(f, shift_s=900), "identity_saml_not_yet_valid"),
    "wrong audience": (lambda s, f: s.respond(f, audience="https://other.example/sp"), "identity_saml_wrong_audience"),
    "wrong recipient": (lambda s, f: s.respond(f, recipient="http://127.0.0.1:9/acs"), "identity_saml_wrong_recipient"),
    "wrong destination": (
        lambda s, f: s.respond(f, destination="http://127.0.0.1:9/acs"),
        "identity_saml_wrong_destination",
    ),
    "unsolicited": (
        lambda s, f: s.idp.respond("alice@acme.example", acs=f.acs, audience=f.audience, in_response_to="_never"),
        "identity_saml_unsolicited",
    ),
    "not XML": (lambda s, f: _b64("<html>"), "identity_saml_response_malformed"),
    "the IdP refused the user": (
        lambda s, f: _b64(base64.b64decode(s.respond(f)).decode().replace("status:Success", "status:Responder", 1)),
        "identity_saml_provider_refused",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_response_gets_no_session_and_leaves_an_audit_event(saml: Saml, case: str) -> None:
    make, code = BAD[case]
    flow = saml.start()
    resp = saml.post(flow, make(saml, flow))
    assert resp.status_code == 401, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    assert resp.json()["code"] == code, resp.json()
    assert "velyrix_session" not in resp.headers.get("set-cookie", "")
    assert saml.sessions() == 0
    events = saml.denied(code)
    assert len(events) == 1 and events[0].outcome == "denied" and events[0].status_code == 401


@pytest.fixture
def saml_pg(home: Path, pg_server: Any, tmp_path: Path) -> Iterator[Saml]:
    """``saml`` on a real PostgreSQL database."""
    from velyrix.ops.service import create_app

    with Served(create_app(pg_server.create_database("saml_replay"))) as served:
        owner = make_tenant(served.app, "acme")
        with saml_idp(tmp_path, USERS) as idp:
            yield Saml(served, idp, add_provider(served.url, owner, idp))


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_replayed_response_and_a_reused_assertion_id_are_refused(
    request: pytest.FixtureRequest, database: str
) -> None:
    saml: Saml = request.getfixturevalue("saml" if database == "sqlite" else "saml_pg")
    flow = saml.start()
    good = saml.respond(flow, assertion_id="_fixed-assertion-id")
    assert saml.post(flow, good).status_code == 303
    again = saml.post(flow, good)
    assert again.status_code == 401 and again.json()["code"] == "identity_saml_replayed"
    other = saml.start()  # the same assertion id signed again for a new login
    reused = saml.post(other, saml.respond(other, assertion_id="_fixed-assertion-id"))
    assert reused.status_code == 401 and reused.json()["code"] == "identity_saml_replayed"
    assert saml.sessions() == 1 and len(saml.denied("identity_saml_replayed")) == 2


def test_the_sp_metadata_names_the_acs_and_wants_signed_assertions(saml: Saml) -> None:
    flow = saml.start()
    meta = httpx.get(f"{saml.served.url}/auth/saml/{saml.provider}/metadata")
    assert meta.status_code == 200
    assert f'entityID="{flow.audience}"' in meta.text and flow.acs in meta.text
    assert 'WantAssertionsSigned="true"' in meta.text


def test_metadata_of_another_entity_or_without_a_certificate_is_refused(served: Served, tmp_path: Path) -> None:
    owner = make_tenant(served.app, "acme")
    with saml_idp(tmp_path, USERS) as idp:
        good = idp.metadata()
        bad = {
            "another entity": {"issuer": "https://other.example/idp", "saml_metadata": good},
            "no certificate": {
                "issuer": idp.entity_id,
                "saml_metadata": re.sub(r"<md:KeyDescriptor.*?</md:KeyDescriptor>", "", good),
            },
            "not XML": {"issuer": idp.entity_id, "saml_metadata": "<md:EntityDescriptor"},
        }
        for case, fields in bad.items():
            body = {"name": "corp", "kind": "saml", **fields}
            resp = httpx.post(
                f"{served.url}/v1/identity-providers", json=body, headers={"Authorization": f"Bearer {owner}"}
            )
            assert resp.status_code == 422 and resp.json()["code"] == "invalid_input", (case, resp.text)
        listed = httpx.get(f"{served.url}/v1/identity-providers", headers={"Authorization": f"Bearer {owner}"})
        assert listed.json()["items"] == []


def test_clock_skew_is_bounded_at_120_seconds(saml: Saml) -> None:
    late = saml.start()  # ended 60 s ago: within the tolerated skew
    assert saml.post(late, saml.respond(late, lifetime_s=300, shift_s=-360)).status_code == 303
    too_late = saml.start()  # ended 150 s ago
    refused = saml.post(too_late, saml.respond(too_late, lifetime_s=300, shift_s=-450))
    assert refused.status_code == 401 and refused.json()["code"] == "identity_saml_expired"
    early = saml.start()  # valid from 60 s from now (NotBefore is 30 s before the shifted instant)
    assert saml.post(early, saml.respond(early, shift_s=90)).status_code == 303


def test_velyrix_login_sso_callback_gets_a_key_through_saml(saml: Saml) -> None:
    """The loopback flow of ``velyrix login --sso``: the ACS answers the CLI's callback with a one-time code
    that, with the PKCE verifier, becomes a key of the user's role; the code works once."""
    from velyrix.controlplane.identity import oidc

    verifier, challenge = oidc.pkce_pair()
    callback = "http://127.0.0.1:9/callback"
    resp = httpx.get(  # what velyrix login --sso --tenant acme opens: the tenant's SAML IdP, through Velyrix
        f"{saml.served.url}/auth/acme/login",
        params={"cli_redirect": callback, "cli_challenge": challenge},
        follow_redirects=True,
    )
    assert resp.status_code == 200 and "Test IdP sign-in" in resp.text
    assert [r.url.path for r in resp.history] == ["/auth/acme/login", f"/auth/saml/{saml.provider}/login"]
    request = read_request(str(resp.url))
    flow = Flow(request.id, request.assertion_consumer_service_url, request.issuer.text)
    answer = saml.post(flow, saml.respond(flow))
    assert answer.status_code == 303 and answer.headers["location"].startswith(callback + "?code=")
    code = answer.headers["location"].split("code=", 1)[1]
    token = httpx.post(f"{saml.served.url}/auth/cli/token", json={"code": code, "code_verifier": verifier})
    assert token.status_code == 200 and token.json()["role"] == "owner", token.text
    listed = httpx.get(f"{saml.served.url}/v1/clusters", headers={"Authorization": f"Bearer {token.json()['api_key']}"})
    assert listed.status_code == 200
    again = httpx.post(f"{saml.served.url}/auth/cli/token", json={"code": code, "code_verifier": verifier})
    assert again.status_code == 400 and again.json()["code"] == "identity_code_invalid"
    assert saml.sessions() == 0


def test_the_host_header_of_the_acs_post_cannot_move_the_audience(saml: Saml) -> None:
    """The ACS and audience are the ones the AuthnRequest named (held in the login flow)."""
    flow = saml.start()
    elsewhere = f"http://evil.example/auth/saml/{saml.provider}"
    forged = saml.respond(flow, acs=f"{elsewhere}/acs", audience=f"{elsewhere}/metadata")
    resp = httpx.post(flow.acs, data={"SAMLResponse": forged}, headers={"Host": "evil.example"})
    assert resp.status_code == 401 and resp.json()["code"] == "identity_saml_wrong_destination"
    assert saml.sessions() == 0
