"""What the browser tests share: one headless Debian Chromium per test module, driven by Playwright (never a
downloaded browser); the control plane served on loopback under a temporary VELYRIX_HOME; a tenant's OpenID
provider (the npm ``oidc-provider``) registered through the API; the sign-in through that provider's login
and consent pages, from the console's sign-in page or from ``/auth/<tenant>/login``; and a virtual security
key (Chromium's DevTools WebAuthn domain)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.controlplane.conftest import cluster_body, enroll_fleet
from tests.identity.conftest import Served
from tests.identity.oidc_provider import CLIENT_ID, CLIENT_SECRET
from tests.identity.test_saml_api import make_tenant

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if shutil.which(CHROMIUM) is None:
        pytest.skip("needs Debian's chromium (scripts/apt-packages.txt)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield chromium
        chromium.close()


@contextmanager
def served_home(factory: pytest.TempPathFactory, **env: str) -> Iterator[tuple[Path, Served]]:
    """The control plane of ``velyrix.ops.service`` on a real uvicorn (``tests/identity/conftest.py``), its
    VELYRIX_HOME and signing keys in a new temporary folder, ``env`` set and VELYRIX_DATABASE_URL unset
    while it runs; yields the home and the server."""
    from velyrix.ops.service import create_app

    home = factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_HOME", str(home))
        mp.setenv("VELYRIX_SIGNING_KEY_DIR", str(home / "keys"))
        for name, value in env.items():
            mp.setenv(name, value)
        mp.delenv("VELYRIX_DATABASE_URL", raising=False)
        with Served(create_app()) as served:
            yield home, served


def acme_and_beta(served: Served, node_count: int = 1) -> list[tuple[str, str]]:
    """The fleet enrolled (capacity is counted from its nodes), then tenants acme and beta, each with a
    cluster of ``node_count`` nodes applied through the API (``acme-train``, ``beta-secret``): for each,
    the owner key's secret and the cluster's id."""
    url = f"http://localhost:{served.port}"
    enroll_fleet(served.app.state.sessionmaker)
    made = []
    for tenant, name in (("acme", "acme-train"), ("beta", "beta-secret")):
        key = make_tenant(served.app, tenant)
        resp = httpx.post(
            f"{url}/v1/clusters",
            json=cluster_body(name, node_count),
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,  # the first apply plans (catalog, fabric) and may be slow on a loaded machine
        )
        assert resp.status_code == 201, resp.text
        made.append((key, str(resp.json()["id"])))
    return made


def audit_events(served: Served, action: str) -> list[Any]:
    """The audit events of ``action``."""
    import sqlalchemy as sa

    from velyrix.controlplane.db import models

    with served.app.state.sessionmaker() as s:
        return list(s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.action == action)))


def oidc_idp(issuer: str, domain: str, group_map: dict[str, str], **extra: str) -> dict[str, Any]:
    """The body of ``POST /v1/identity-providers`` for the test provider at ``issuer`` (its one client):
    users of ``domain`` only, roles from ``group_map``; ``extra`` adds or replaces fields (name: corp)."""
    body: dict[str, Any] = {
        "name": "corp",
        "kind": "oidc",
        "issuer": issuer,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "allowed_domains": [domain],
        "group_map": group_map,
    }
    return body | extra


def add_oidc_idp(url: str, owner_key: str, body: dict[str, Any]) -> dict[str, Any]:
    """Register the identity provider ``body`` through the API as the tenant's owner; its answer."""
    made = httpx.post(f"{url}/v1/identity-providers", json=body, headers={"Authorization": f"Bearer {owner_key}"})
    assert made.status_code == 201, made.text
    answer: dict[str, Any] = made.json()
    return answer


def provider_login(page: Any, login: str) -> None:
    """On the OpenID provider's login page: sign in as ``login`` (any password), then consent (the
    consent page lists what Velyrix asks for)."""
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")
    page.wait_for_selector("text=Authorize")
    page.click("button[type=submit]")


def sso_sign_in(page: Any, url: str, tenant: str, login: str) -> None:
    """Through ``/auth/<tenant>/login`` and the provider's pages, as ``login``."""
    page.goto(f"{url}/auth/{tenant}/login")
    provider_login(page, login)


def console_sign_in(page: Any, url: str, tenant: str, login: str, deep: str = "") -> None:
    """From the console's sign-in page (or from the deep link ``deep``, which sends a visitor without a
    session there): the tenant's name, then the provider's pages, as ``login``; with ``deep``, until the
    browser is back on it."""
    if deep:
        page.goto(url + deep)
        page.wait_for_url(re.compile(r".*/console/sign-in\?next=.*"))
    else:
        page.goto(f"{url}/console/sign-in")
    page.fill("#tenant", tenant)
    page.click("button[type=submit]")
    provider_login(page, login)
    if deep:
        page.wait_for_url(url + deep)


def security_key(context: Any, page: Any) -> tuple[Any, str]:
    """A virtual CTAP2 security key with user verification (the DevTools WebAuthn domain) on ``page``:
    the CDP session and the authenticator's id."""
    cdp = context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    options = {
        "protocol": "ctap2",
        "transport": "usb",
        "hasResidentKey": False,
        "hasUserVerification": True,
        "isUserVerified": True,
        "automaticPresenceSimulation": True,
    }
    made = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})
    return cdp, str(made["authenticatorId"])
