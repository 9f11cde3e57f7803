"""The tenant admin pages in headless Debian Chromium (one browser for the module, ``tests/identity/browser.py``):
a deep link opened without a session goes through sign-in and the tenant's OpenID provider (the npm
``oidc-provider``) and lands back on its page; the owner reads the incidents, changes a member's role (the
API first asks for a step-up, shown beside the role), makes a SCIM token, filters the audit log down to
the console's own events and checks the log's chain, and verifies the sanitization certificates. Every
console page is read at 1280x800 and at a phone's 390x844 (no horizontal scroll of the page: wide tables
scroll in their own box), with axe-core finding no serious or critical violation at either size."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.console import admin_seed
from tests.console.conftest import _cluster, _tenant
from tests.console.test_console_browser import axe_serious
from tests.identity.browser import browser, console_sign_in, oidc_idp, served_home  # noqa: F401  (fixture)
from tests.identity.conftest import Served
from tests.identity.oidc_provider import CLIENT_SECRET, oidc_provider

ACCOUNTS = {"alice@acme.example": {"name": "Alice", "groups": ["gpu-admins"]}}
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@dataclass
class Site:
    served: Served
    url: str
    acme: Any
    beta: Any


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    from velyrix.controlplane.db.models.identity import IdentityProvider, TenantIdentityPolicy

    with served_home(tmp_path_factory) as (home, served):
        url = f"http://localhost:{served.port}"
        with oidc_provider([f"{url}/auth/oidc/callback"], ACCOUNTS, home / "oidc.log") as issuer:
            with served.app.state.sessionmaker() as s:
                acme, beta = _tenant(s, "acme"), _tenant(s, "beta")
                s.add(IdentityProvider(tenant_id=acme.id, **oidc_idp(issuer, "acme.example", {"gpu-admins": "owner"})))
                # no second factor at sign-in here (tests/identity/test_oidc_browser.py signs in with one)
                s.add(TenantIdentityPolicy(tenant_id=acme.id, mfa_required=False))
                _cluster(s, acme, 4)
                _cluster(s, beta, 2)
                s.flush()
                acme.admin, beta.admin = admin_seed.seed(s, acme), admin_seed.seed(s, beta)
                s.commit()
            yield Site(served, url, acme, beta)


def _sign_in(page: Any, site: Site, deep: str) -> None:
    console_sign_in(page, site.url, "acme", "alice@acme.example", deep)


WIDEST = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > window.innerWidth)
  .slice(0, 3)
  .map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""
"""The first elements that stick out of the viewport (outside a box of their own that scrolls)."""


def check(page: Any, name: str, shots: tuple[str, str] | None = None) -> None:
    """axe at desktop and phone width (``shots``: the screenshots' names at each, default ``name`` and
    none); at the phone's width the page itself never scrolls sideways (a wide table scrolls inside its
    own box)."""
    desktop, phone = shots or (name, "")
    for size, shot in ((DESKTOP, desktop), (PHONE, phone)):
        page.set_viewport_size(size)
        assert axe_serious(page, shot) == [], (name, size)
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= size["width"], (
            f"{name}: the page is {wide} px wide at {size['width']} px: {page.evaluate(WIDEST)}"
        )
    page.set_viewport_size(DESKTOP)


def test_the_admin_pages_in_the_browser(browser: Any, site: Site) -> None:  # noqa: F811
    context = browser.new_context(bypass_csp=True, viewport=DESKTOP)  # axe is injected
    page = context.new_page()
    incident = site.acme.admin["incident_id"]
    _sign_in(page, site, f"/console/incidents/{incident}")  # a deep link survives single sign-on
    assert site.acme.admin["incident_note"] in page.inner_text("#timeline")
    assert "first response: after 8 min" in page.inner_text("#timers")
    check(page, "incident")
    page.click("nav >> text=Incidents")
    assert site.acme.admin["incident_title"] in page.inner_text("#incidents")
    assert site.beta.admin["incident_title"] not in page.content()
    check(page, "incidents", ("incidents", "incidents-phone"))

    page.click("nav >> text=Members")
    member = site.acme.admin["user_id"]
    page.select_option(f"#role-{member}", "viewer")
    page.click(f"button[aria-label='Change the role of {site.acme.admin['user_name']}']")
    error = page.locator(f"#role-{member}-error")
    assert "step-up" in error.inner_text()  # the API's rule, beside the field
    assert page.get_attribute(f"#role-{member}", "aria-describedby") == f"role-{member}-error"
    check(page, "members", ("members", "members-phone"))
    cookie = next(c["value"] for c in context.cookies() if c["name"] == "velyrix_session")
    admin_seed.step_up(site.served.app, cookie)  # as /auth/mfa/step-up records a security key's assertion
    page.select_option(f"#role-{member}", "viewer")
    page.click(f"button[aria-label='Change the role of {site.acme.admin['user_name']}']")
    page.wait_for_selector("#changed")
    assert page.locator(f"#member-{member} .role").inner_text() == "viewer"

    page.click("nav >> text=SSO and SCIM")
    assert site.acme.admin["provider_issuer"] in page.inner_text("#providers")
    assert admin_seed.CLIENT_SECRET not in page.content() and CLIENT_SECRET not in page.content()
    page.fill("#scim-name", "okta-provisioning")
    page.click("#add-scim-token-button")
    page.wait_for_selector("#scim-secret")
    page.locator("#scim-secret").evaluate("e => e.textContent = 'vlx_(shown once)'")  # never in a picture
    check(page, "identity")

    page.click("nav >> text=Audit log")
    page.fill("#audit-action", "console.*")
    page.click("#filter")
    page.wait_for_url("**/console/audit?**")
    actions = page.locator("#events tbody td:nth-child(2)").all_inner_texts()
    assert "console.users.update" in actions and "console.scim_tokens.create" in actions
    assert all(a.startswith("console.") for a in actions)
    check(page, "audit")
    page.click("#verify-link")
    assert page.inner_text("#verdict").startswith("Log holds:")
    check(page, "audit-verify")

    page.click("nav >> text=Sanitization")
    row = page.locator(f"#cert-{site.acme.admin['certificate_id']}")
    assert "valid:" in row.locator(".signature").inner_text()
    with page.expect_download() as download:
        row.locator("a").click()
    assert Path(download.value.path()).read_text().count('"signature"') == 1
    check(page, "sanitization")
    context.close()


def test_every_console_page_reads_at_phone_width(browser: Any, site: Site) -> None:  # noqa: F811
    context = browser.new_context(bypass_csp=True, viewport=PHONE)
    page = context.new_page()
    page.goto(f"{site.url}/console/sign-in")
    check(page, "sign-in", ("", ""))
    _sign_in(page, site, f"/console/clusters/{site.acme.cluster_id}/nodes")
    check(page, "node grid", ("", "node-grid-phone"))
    for path in ("/console/clusters", f"/console/clusters/{site.acme.cluster_id}", "/console/keys"):
        page.goto(site.url + path)
        check(page, path, ("", ""))
    nav = page.locator("header nav")
    page.set_viewport_size(PHONE)
    assert nav.bounding_box()["width"] <= PHONE["width"]  # the nav wraps instead of widening the page
    context.close()
