"""The operator's journey in headless Debian Chromium (one browser for the module): an operator of the
provider's tenant, signed in (a browser session with a second factor, started as the login flow leaves
it: ``identity.login.start_session``; the OIDC and security-key steps are test_console_browser.py's and
tests/identity's), opens the fleet grid (filters by GET), the quarantine queue and capacity, then
acknowledges and resolves a P1 incident through the page's form within its first-response timer.

The P1 is opened as the control plane opens one when a cluster loses a node with no spare left
(``ops.noc.incidents.open_incident``, seeded here; the twin's XID-to-quarantine path is
tests/controlplane's). axe-core finds no serious or critical violation on each page at 1280x800; with
``VELYRIX_CONSOLE_SCREENSHOTS`` set, each page's screenshot is saved (docs/console.md)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.console.conftest import hardware, sample
from tests.console.test_console_browser import axe_serious
from tests.identity.browser import browser  # noqa: F401  (fixture)
from tests.identity.conftest import Served

PROVIDER = "velyrix-noc"


@dataclass
class Noc:
    url: str
    cookie: str
    incident_id: str
    quarantined: str


def _seed(app: Any) -> Noc:
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models import health as health_tables
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import login
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
        user = User(tenant_id=noc.id, user_name="ops@noc.example", role="operator")
        s.add(user)
        s.flush()
        _, cookie, _ = login.start_session(s, user, "oidc", mfa=True)
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
        s.commit()
        return Noc("", cookie, row.id, "gpu-009")


@pytest.fixture(scope="module")
def noc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Noc]:
    from velyrix.ops.service import create_app

    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_HOME", str(home))
        mp.setenv("VELYRIX_SIGNING_KEY_DIR", str(home / "keys"))
        mp.setenv("VELYRIX_PROVIDER_TENANT", PROVIDER)
        mp.delenv("VELYRIX_DATABASE_URL", raising=False)
        with Served(create_app()) as served:
            found = _seed(served.app)
            found.url = f"http://localhost:{served.port}"
            yield found


def test_an_operator_reads_the_fleet_and_resolves_a_p1_within_its_timer(browser: Any, noc: Noc) -> None:  # noqa: F811
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 800})  # axe is injected
    context.add_cookies([{"name": "velyrix_session", "value": noc.cookie, "url": noc.url}])
    page = context.new_page()
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
    context.close()
