"""OIDC single sign-on end to end in headless Chromium against the npm ``oidc-provider`` (its login and
consent pages): a user of tenant A signs in, sees only tenant A's clusters, signs out, and the old cookie
answers 401; a user of a domain the tenant does not allow gets no session; a replayed callback is
refused; a user registers a security key (Chromium's virtual authenticator, user verification on), is
asked for it at the next login and again (step-up) for an owner key; each step leaves its audit event."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.controlplane.conftest import cluster_body
from tests.identity.browser import (  # noqa: F401  (fixture: browser)
    acme_and_beta,
    add_oidc_idp,
    audit_events,
    browser,
    oidc_idp,
    provider_login,
    security_key,
    served_home,
    sso_sign_in,
)
from tests.identity.conftest import Served
from tests.identity.oidc_provider import oidc_provider

ACCOUNTS = {
    "alice@acme.example": {"name": "Alice", "groups": ["gpu-admins"]},
    "bob@acme.example": {"name": "Bob", "groups": []},
    "carol@acme.example": {"name": "Carol", "groups": ["gpu-admins"]},
    "eve@evil.example": {"name": "Eve", "groups": ["gpu-admins"]},
}


@dataclass
class Sso:
    served: Served
    url: str
    issuer: str
    owner_a: str
    cluster_a: str
    cluster_b: str

    def events(self, action: str) -> list[Any]:
        return audit_events(self.served, action)


@pytest.fixture(scope="module")
def sso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sso]:
    with served_home(tmp_path_factory) as (home, served):
        url = f"http://localhost:{served.port}"
        (owner_a, _), _ = acme_and_beta(served)
        with oidc_provider([f"{url}/auth/oidc/callback"], ACCOUNTS, home / "oidc.log") as issuer:
            idp = oidc_idp(issuer, "acme.example", {"gpu-admins": "owner"}, default_role="viewer")
            assert "client_secret" not in add_oidc_idp(url, owner_a, idp)
            yield Sso(served, url, issuer, owner_a, "acme-train", "beta-secret")


def sign_in(page: Any, sso: Sso, login: str) -> None:
    """Through the provider's login and consent pages, as ``login``."""
    sso_sign_in(page, sso.url, "acme", login)


def test_sign_in_sees_own_tenant_only_then_logout_ends_the_session(browser: Any, sso: Sso) -> None:  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, sso, "alice@acme.example")
    page.wait_for_url(f"{sso.url}/ui")
    text = page.inner_text("body")
    assert "alice@acme.example" in text and "(owner)" in text, text
    assert sso.cluster_a in text and sso.cluster_b not in text
    cookie = next(c for c in context.cookies() if c["name"] == "velyrix_session")
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Lax"
    jar = {"velyrix_session": cookie["value"]}
    assert httpx.get(f"{sso.url}/v1/clusters", cookies=jar).status_code == 200
    # API mutations with the cookie need the CSRF token (a cross-site form cannot send it)
    no_csrf = httpx.post(f"{sso.url}/v1/clusters", json=cluster_body("x"), cookies=jar)
    assert no_csrf.status_code == 403 and no_csrf.json()["code"] == "identity_csrf_failed"

    page.click("#logout")
    page.wait_for_load_state()
    assert "signed out" in page.inner_text("body").lower()
    after = httpx.get(f"{sso.url}/ui", cookies=jar)
    assert after.status_code == 401
    assert httpx.get(f"{sso.url}/v1/clusters", cookies=jar).status_code == 401
    logins = [e for e in sso.events("auth.login") if e.outcome == "success"]
    assert any(e.actor.endswith("(alice@acme.example)") and e.detail["role"] == "owner" for e in logins)
    assert any(e.outcome == "success" for e in sso.events("auth.logout"))
    context.close()


def test_a_domain_the_tenant_does_not_allow_gets_no_session(browser: Any, sso: Sso) -> None:  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    sign_in(page, sso, "eve@evil.example")
    page.wait_for_url(lambda u: "/auth/oidc/callback" in u)
    assert "identity_domain_not_allowed" in page.content()
    assert not [c for c in context.cookies() if c["name"] == "velyrix_session"]
    denied = [e for e in sso.events("auth.login") if e.error_code == "identity_domain_not_allowed"]
    assert denied and denied[-1].outcome == "denied" and denied[-1].status_code == 401
    context.close()


def test_a_replayed_callback_is_refused(browser: Any, sso: Sso) -> None:  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    callbacks: list[str] = []
    page.on("request", lambda r: callbacks.append(r.url) if "/auth/oidc/callback" in r.url else None)
    sign_in(page, sso, "bob@acme.example")
    page.wait_for_url(f"{sso.url}/ui")
    assert "(viewer)" in page.inner_text("body")
    replay = httpx.get(callbacks[0])
    assert replay.status_code == 400 and replay.json()["code"] == "identity_state_invalid"
    assert "set-cookie" not in replay.headers
    context.close()


def test_velyrix_login_sso_through_the_loopback(browser: Any, sso: Sso, tmp_path: Path) -> None:  # noqa: F811
    """``velyrix login --sso`` (a real process): the browser signs in, the CLI gets a key of the user's role."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "VELYRIX_HOME": str(tmp_path / "cli-home")}
    cmd = [sys.executable, "-m", "velyrix.cli.main", "login", "--sso", "--tenant", "acme", "--no-browser"]
    proc = subprocess.Popen(
        [*cmd, "--endpoint", sso.url], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert line.startswith("Sign in at: "), line
    context = browser.new_context()
    page = context.new_page()
    page.goto(line.removeprefix("Sign in at: ").strip())
    provider_login(page, "alice@acme.example")
    page.wait_for_selector("#done")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "alice@acme.example (owner)" in out
    import json

    key = json.loads((tmp_path / "cli-home" / "credentials.json").read_text())["api_key"]
    listed = httpx.get(f"{sso.url}/v1/api-keys", headers={"Authorization": f"Bearer {key}"})
    assert listed.status_code == 200
    mine = [k for k in listed.json()["items"] if k["description"] == "velyrix login --sso"]
    assert mine and mine[0]["role"] == "owner" and mine[0]["expires_at"]
    context.close()


def test_a_security_key_is_asked_at_the_next_login_and_for_an_owner_key(browser: Any, sso: Sso) -> None:  # noqa: F811
    context = browser.new_context()
    page = context.new_page()
    cdp, authenticator = security_key(context, page)
    sign_in(page, sso, "carol@acme.example")
    page.wait_for_url(f"{sso.url}/ui")  # no key yet: signed in, changes wait for a second factor
    page.click("#security")
    page.click("#register-key")
    page.wait_for_selector("#status:has-text('registered')")
    assert len(cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]) == 1
    page.goto(f"{sso.url}/ui")
    page.click("#logout")
    page.wait_for_selector("text=signed out")

    context.clear_cookies()  # the provider's session too: a full login again
    sign_in(page, sso, "carol@acme.example")
    page.wait_for_url(f"{sso.url}/auth/mfa")  # the identity provider is not enough any more
    assert not [c for c in context.cookies() if c["name"] == "velyrix_session"]
    page.click("#use-key")
    page.wait_for_url(f"{sso.url}/ui")
    text = page.inner_text("body")
    assert "carol@acme.example" in text and "(owner)" in text
    assert sso.cluster_a in text and sso.cluster_b not in text
    login = [e for e in sso.events("auth.login") if e.actor.endswith("(carol@acme.example)")][-1]
    assert login.detail["second_factor"] == "webauthn"

    page.click("#security")
    page.click("#create-owner-key")
    page.wait_for_selector("#status:has-text('created')")
    assert page.inner_text("#secret").startswith("vlx_")
    steps = [e for e in sso.events("mfa.step_up") if e.actor.endswith("(carol@acme.example)")]
    assert [e.outcome for e in steps] == ["success"]  # asked again for the owner key
    refusals = [e for e in sso.events("api_keys.create") if e.error_code == "identity_step_up_required"]
    assert refusals and refusals[-1].actor.endswith("(carol@acme.example)")
    count = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"][0]["signCount"]
    assert count >= 2  # the login's assertion and the step-up's

    cookie = next(c for c in context.cookies() if c["name"] == "velyrix_session")
    page.goto(f"{sso.url}/ui")
    page.click("#logout")
    page.wait_for_selector("text=signed out")
    assert httpx.get(f"{sso.url}/ui", cookies={"velyrix_session": cookie["value"]}).status_code == 401
    context.close()
