"""SAML single sign-on end to end in headless Chromium against the test IdP of ``saml_idp`` (its login
form, then its auto-submitted HTTP-POST to Velyrix's ACS): a user of tenant A signs in, sees only tenant
A's clusters, signs out, and the old cookie answers 401; a user who registered a security key (Chromium's
virtual authenticator, user verification on) is asked for it after the IdP vouched for them, and again
when creating an owner key."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.identity.browser import (  # noqa: F401  (fixture: browser)
    acme_and_beta,
    audit_events,
    browser,
    security_key,
    served_home,
)
from tests.identity.conftest import Served
from tests.identity.saml_idp import saml_idp
from tests.identity.test_saml_api import USERS, add_provider


@dataclass
class Sso:
    served: Served
    url: str
    provider: str
    cluster_a: str
    cluster_b: str

    def events(self, action: str) -> list[Any]:
        return audit_events(self.served, action)


@pytest.fixture(scope="module")
def sso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sso]:
    with served_home(tmp_path_factory) as (home, served), saml_idp(home, USERS) as idp:
        url = f"http://localhost:{served.port}"
        (owner_a, _), _ = acme_and_beta(served)
        yield Sso(served, url, add_provider(url, owner_a, idp), "acme-train", "beta-secret")


def sign_in(page: Any, sso: Sso, login: str) -> None:
    """Through the IdP's login form, as ``login``; the IdP posts its signed response to the ACS."""
    page.goto(f"{sso.url}/auth/saml/{sso.provider}/login")
    page.wait_for_selector("text=Test IdP sign-in")
    page.fill("input[name=login]", login)
    page.click("button[type=submit]")


def _logout_then_401(page: Any, context: Any, sso: Sso) -> None:
    cookie = next(c for c in context.cookies() if c["name"] == "velyrix_session")
    jar = {"velyrix_session": cookie["value"]}
    assert httpx.get(f"{sso.url}/v1/clusters", cookies=jar).status_code == 200
    page.goto(f"{sso.url}/ui")
    page.click("#logout")
    page.wait_for_selector("text=signed out")
    assert httpx.get(f"{sso.url}/ui", cookies=jar).status_code == 401
    assert httpx.get(f"{sso.url}/v1/clusters", cookies=jar).status_code == 401


def test_saml_sign_in_sees_own_tenant_only_then_logout_ends_the_session(browser: Any, sso: Sso) -> None:  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, sso, "alice@acme.example")
    page.wait_for_url(f"{sso.url}/ui")
    text = page.inner_text("body")
    assert "alice@acme.example" in text and "(owner)" in text, text
    assert sso.cluster_a in text and sso.cluster_b not in text
    _logout_then_401(page, context, sso)
    logins = [e for e in sso.events("auth.login") if e.outcome == "success"]
    assert any(e.actor.endswith("(alice@acme.example)") and e.detail["method"] == "saml" for e in logins)
    context.close()


def test_saml_sign_in_asks_for_the_security_key_then_again_for_an_owner_key(browser: Any, sso: Sso) -> None:  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    cdp, authenticator = security_key(context, page)
    sign_in(page, sso, "mallory@acme.example")
    page.wait_for_url(f"{sso.url}/ui")  # no key yet: signed in
    page.click("#security")
    page.click("#register-key")
    page.wait_for_selector("#status:has-text('registered')")
    assert len(cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]) == 1
    _logout_then_401(page, context, sso)

    sign_in(page, sso, "mallory@acme.example")
    page.wait_for_url(f"{sso.url}/auth/mfa")  # the IdP's assertion is not enough any more
    assert not [c for c in context.cookies() if c["name"] == "velyrix_session"]
    page.click("#use-key")
    page.wait_for_url(f"{sso.url}/ui")
    text = page.inner_text("body")
    assert "mallory@acme.example" in text and sso.cluster_a in text and sso.cluster_b not in text
    login = [e for e in sso.events("auth.login") if e.actor.endswith("(mallory@acme.example)")][-1]
    assert login.detail["method"] == "saml" and login.detail["second_factor"] == "webauthn"
    assert [e for e in sso.events("auth.mfa_required") if e.actor.endswith("(mallory@acme.example)")]

    page.click("#security")  # an owner key needs the security key again (step-up)
    page.click("#create-owner-key")
    page.wait_for_selector("#status:has-text('created')")
    assert page.inner_text("#secret").startswith("vlx_")
    steps = [e for e in sso.events("mfa.step_up") if e.actor.endswith("(mallory@acme.example)")]
    assert [e.outcome for e in steps] == ["success"]
    refusals = [e for e in sso.events("api_keys.create") if e.error_code == "identity_step_up_required"]
    assert refusals and refusals[-1].actor.endswith("(mallory@acme.example)")
    _logout_then_401(page, context, sso)
    context.close()
