"""The operator's journey in headless Debian Chromium (one browser for the module): an operator of the
provider's tenant signs in through the tenant's OpenID provider (the npm ``oidc-provider``; the tenant's
group map makes the group ``noc-oncall`` an ``operator``, items of identity_providers.create only the
provider's tenant may set), registers a security key (Chromium's virtual authenticator through the
DevTools WebAuthn domain, user verification on), and signs in again with it: only then does the session
act as provider staff. The operator opens the fleet grid (filters by GET), orders a drain of a node from it
(its reboot is refused beside the field: this control plane drives no fleet), the quarantine queue and
capacity, then acknowledges and resolves a P1 incident through the page's form within its
first-response timer, pauses a rollout from its page (waves, nodes, gate verdicts; the rollout is
seeded mid-way, as the rollout engine leaves one), and reads the contracts page.

The P1 is seeded: it is opened as the control plane opens one when a cluster loses a node with no spare
left (``ops.noc.incidents.open_incident``), and the quarantined node and its report are written as the
server leaves them (the twin's XID-to-quarantine path is tests/controlplane's). axe-core finds no serious
or critical violation on each page at 1280x800; with ``VELYRIX_CONSOLE_SCREENSHOTS`` set, each page's
screenshot is saved (docs/console.md)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.console.conftest import hardware, rollout, sample
from tests.console.test_console_browser import axe_serious
from tests.identity.browser import (  # noqa: F401  (fixture: browser)
    add_oidc_idp,
    browser,
    oidc_idp,
    security_key,
    served_home,
    sso_sign_in,
)
from tests.identity.oidc_provider import oidc_provider

PROVIDER = "velyrix-noc"
ACCOUNTS = {"ops@noc.example": {"name": "Ops", "groups": ["noc-oncall"]}}


@dataclass
class Noc:
    url: str
    owner_key: str
    incident_id: str
    quarantined: str


def _seed(app: Any) -> Noc:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models import health as health_tables
    from velyrix.fleet import clock
    from velyrix.ops.noc import incidents

    with app.state.sessionmaker() as s:
        noc, acme = models.Tenant(name=PROVIDER, display_name="NOC"), models.Tenant(name="acme", display_name="Acme")
        s.add_all([noc, acme])
        s.flush()
        for i in range(64):
            name = f"gpu-{i:03d}"
            stage = "quarantined" if i == 9 else "production"
            node = models.Node(
                name=name,
                region="us-east-1",
                node_type="hgx-h200-8g",
                tenant_id=acme.id if i < 32 else None,
                provisioning_state="allocated" if i < 32 else "available",
                fleet_stage=stage,
                hardware={**hardware(name, su=i // 32, slot=i % 32), "position": {"su": i // 32, "rack": f"r{i // 4}"}},
                labels={},
            )
            s.add(node)
            s.flush()
            bad = i == 9
            s.add(
                health_tables.NodeReport(
                    node_id=node.id,
                    tenant_id=node.tenant_id,
                    collected_at_s=1.0,
                    up=True,
                    problems=[],
                    sample=sample(name, xid=79 if bad else None, dbe=1 if bad else 0),
                    health_level=3 if bad else 0,
                    health_summary="XID 79 on GPU 3: GPU fallen off the bus" if bad else "",
                )
            )
        _, owner_key = principals.issue_key(s, tenant_id=noc.id, name="noc owner", role="owner")
        row, _ = incidents.open_incident(
            s,
            key="capacity/acme-train",
            priority="P1",
            title="acme-train lost gpu-009 and no spare is left",
            tenant_id=acme.id,
            cluster_id=None,
            source="control-plane",
            at=clock.now(),
        )
        rollout(s, ["gpu-040", "gpu-041", "gpu-042", "gpu-043"])
        s.commit()
        return Noc("", owner_key, row.id, "gpu-009")


@pytest.fixture(scope="module")
def noc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Noc]:
    with served_home(tmp_path_factory, VELYRIX_PROVIDER_TENANT=PROVIDER) as (home, served):
        found = _seed(served.app)
        found.url = f"http://localhost:{served.port}"
        with oidc_provider([f"{found.url}/auth/oidc/callback"], ACCOUNTS, home / "oidc.log") as issuer:
            idp = oidc_idp(issuer, "noc.example", {"noc-oncall": "operator"}, name="noc-sso", default_role="viewer")
            add_oidc_idp(found.url, found.owner_key, idp)
            yield found


def _sign_in(page: Any, noc: Noc) -> None:
    """Through the provider tenant's OpenID provider (its login and consent pages) as the on-call operator."""
    sso_sign_in(page, noc.url, PROVIDER, "ops@noc.example")


def _operator_with_a_security_key(context: Any, noc: Noc) -> Any:
    """The page of an operator signed in through SSO and then with a security key that verified the user:
    before the key, the session has no scope, so its first login lands on the page that registers one."""
    page = context.new_page()
    cdp, authenticator = security_key(context, page)
    _sign_in(page, noc)
    page.wait_for_url(f"{noc.url}/ui/security")  # signed in, no scope yet: the login lands on the key's page
    page.click("#register-key")
    page.wait_for_selector("#status:has-text('registered')")
    context.clear_cookies()  # Velyrix's and the identity provider's sessions: a full login again
    _sign_in(page, noc)
    page.wait_for_url(f"{noc.url}/auth/mfa")  # the identity provider is not enough for an operator
    page.click("#use-key")
    page.wait_for_url(f"{noc.url}/ui")
    assert "ops@noc.example" in page.inner_text("#who") and "(operator)" in page.inner_text("#who")
    credential = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"][0]
    assert credential["signCount"] >= 1  # the login's assertion
    return page


def test_an_operator_reads_the_fleet_and_resolves_a_p1_within_its_timer(browser: Any, noc: Noc) -> None:  # noqa: F811
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 800})  # axe is injected
    page = _operator_with_a_security_key(context, noc)
    page.goto(f"{noc.url}/console/fleet")
    assert page.locator(".n").count() == 64 and page.inner_text("#fleet-count") == "64 of 64 nodes shown."
    assert "us-east-1, scalable unit 1" in page.inner_text("main")
    assert axe_serious(page, "fleet") == []
    page.select_option("#f-state", "quarantined")  # a plain GET form: works without JavaScript
    page.click("#filter")
    page.wait_for_url("**/console/fleet?*state=quarantined*")
    assert page.locator(".n").count() == 1 and page.locator(".n.s-quarantined").get_attribute("title").startswith(
        noc.quarantined
    )

    page.fill("#op-node", "gpu-001")  # the fleet page's drain/reboot form, through nodes.act
    page.select_option("#op-action", "reboot")
    page.fill("#op-reason", "firmware")
    page.click("#op-submit")
    page.wait_for_selector("#op-action-error")  # this control plane drives no fleet: 409 beside the action
    assert "drives no fleet" in page.inner_text("#op-action-error")
    assert axe_serious(page, "") == []
    page.select_option("#op-action", "drain")
    page.click("#op-submit")
    page.wait_for_selector("#operated")
    assert "Drain of gpu-001 ordered" in page.inner_text("#operated")

    page.click("text=Quarantine and RMA")
    row = page.inner_text(f"#q-{noc.quarantined}")
    assert "GPU fallen off the bus" in row and "XID 79×2" in row and "1 DBE" in row
    assert axe_serious(page, "quarantine") == []
    page.click("text=Capacity")
    assert "64" in page.inner_text("#capacity")
    assert axe_serious(page, "capacity") == []

    page.click("text=NOC incidents")
    assert "P1" in page.inner_text("#incidents")
    first = page.locator("[data-timer='first response'] .elapsed")
    shown = first.inner_text()
    page.wait_for_function(
        f"document.querySelector(\"[data-timer='first response'] .elapsed\").textContent !== '{shown}'"
    )
    assert axe_serious(page, "noc-incidents") == []  # the timer counted on in the page (noc-timers.js)
    page.click(f"a[href='/console/noc/incidents/{noc.incident_id}']")
    assert page.inner_text("#incident-state") == "open"
    assert "running" in page.inner_text("[data-timer='first response']")
    page.select_option("#act-action", "ack")
    page.fill("#act-text", "on it: replacing gpu-009")
    page.click("#act-submit")
    page.wait_for_function("document.getElementById('incident-state').textContent === 'acknowledged'")
    assert "met" in page.inner_text("[data-timer='first response']")  # within the P1's 15 minutes
    assert "on it: replacing gpu-009" in page.inner_text("#timeline")
    assert axe_serious(page, "noc-incident") == []
    page.select_option("#act-action", "resolve")
    page.fill("#act-text", "spare delivered")
    page.click("#act-submit")
    page.wait_for_function("document.getElementById('incident-state').textContent === 'resolved'")
    assert "met" in page.inner_text("[data-timer='first response']")

    page.click("text=Rollouts")
    page.click("text=driver-580")
    assert "holds" in page.inner_text("#wave-0") and "gpu-041, gpu-042, gpu-043" in page.inner_text("#wave-1")
    page.select_option("#act-action", "pause")
    page.click("#act-submit")
    page.wait_for_function("document.getElementById('rollout-state').textContent === 'paused'")
    assert axe_serious(page, "rollout") == []
    page.click("text=Contracts")
    assert "first_response_min" in page.inner_text("#contract-acme")
    assert axe_serious(page, "contracts") == []
    context.close()
