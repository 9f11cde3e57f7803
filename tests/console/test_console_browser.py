"""The console in headless Debian Chromium (one browser for the module, ``tests/identity/browser.py``):
a user of tenant acme signs in through the tenant's OpenID provider (the npm ``oidc-provider``), lands
on the clusters list (acme's only), watches a phase change arrive over server-sent events, opens the
node grid (scalable units by rail, a GPU with XID 79 and an ECC error shown fatal), creates an API key
(its secret works against the API) and revokes it (it answers 401 from then on). axe-core, injected
into each page, finds no serious or critical violation.

The cluster is applied through the API; its nodes and their agents' reports are written to the
database as the reconciler and the agents would leave them (the twin's full apply is
tests/controlplane's)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.console.conftest import hardware, sample
from tests.identity.browser import acme_and_beta, add_oidc_idp, browser, console_sign_in, oidc_idp, served_home  # noqa: F401
from tests.identity.conftest import Served
from tests.identity.oidc_provider import oidc_provider

SHOTS = os.environ.get("VELYRIX_CONSOLE_SCREENSHOTS", "")
"""A folder to save each page's screenshot in (docs/console.md's are made so), or empty for none."""
AXE = Path(__file__).parents[2] / "src/velyrix/console/assets/node_modules/axe-core/axe.min.js"
ACCOUNTS = {"alice@acme.example": {"name": "Alice", "groups": ["gpu-admins"]}}


@dataclass
class Site:
    served: Served
    url: str
    owner: str
    cluster_id: str
    foreign_cluster: str


def _deliver(app: Any, cluster_id: str, count: int) -> None:
    """Give the cluster ``count`` fleet nodes with positions and agent reports (node 1: XID 79, ECC DBE)."""
    import sqlalchemy as sa

    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models import health as health_tables

    with app.state.sessionmaker() as s:
        cluster = s.get(models.Cluster, cluster_id)
        free = s.scalars(
            sa.select(models.Node)
            .where(models.Node.cluster_id.is_(None), models.Node.region == cluster.region)
            .limit(count)
        )
        for i, node in enumerate(free):
            node.cluster_id, node.tenant_id, node.provisioning_state = cluster.id, cluster.tenant_id, "allocated"
            node.hardware = hardware(node.name, su=i // 2, slot=i % 2)
            bad = i == 1
            s.add(
                health_tables.NodeReport(
                    node_id=node.id,
                    tenant_id=cluster.tenant_id,
                    collected_at_s=1.0,
                    up=True,
                    problems=[],
                    sample=sample(node.name, xid=79 if bad else None, dbe=1 if bad else 0),
                    health_level=3 if bad else 0,
                    health_summary="XID 79 on GPU 3" if bad else "",
                )
            )
        s.commit()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with served_home(tmp_path_factory) as (home, served):
        url = f"http://localhost:{served.port}"
        (owner, cluster_id), _ = acme_and_beta(served, node_count=4)
        _deliver(served.app, cluster_id, 4)
        # sessions of this tenant may change things without a second factor (the MFA flow is
        # tests/identity/test_oidc_browser.py's)
        policy = httpx.put(f"{url}/v1/identity-policy", json={"mfa_required": False}, headers=_bearer(owner))
        assert policy.status_code == 200, policy.text
        with oidc_provider([f"{url}/auth/oidc/callback"], ACCOUNTS, home / "oidc.log") as issuer:
            add_oidc_idp(url, owner, oidc_idp(issuer, "acme.example", {"gpu-admins": "owner"}))
            yield Site(served, url, owner, cluster_id, "beta-secret")


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def axe_serious(page: Any, name: str) -> list[str]:
    """The serious and critical axe-core violations of the page (rule id and first target); the page's
    screenshot saved as ``name``.png first when ``SHOTS`` names a folder and ``name`` is not empty."""
    if SHOTS and name:
        hidden = [page.locator("#secret")]  # a key's secret never lands in a picture
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True, mask=hidden)
    if not AXE.is_file():
        pytest.skip("needs src/velyrix/console/assets/node_modules (scripts/bootstrap.sh runs npm ci)")
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        "async () => (await axe.run(document)).violations.map(v => [v.id, v.impact, v.nodes[0].target.join(' ')])"
    )
    return [f"{rule} ({impact}) at {target}" for rule, impact, target in found if impact in ("serious", "critical")]


def test_sign_in_read_the_grid_and_manage_a_key(browser: Any, site: Site) -> None:  # noqa: F811
    from velyrix.controlplane import status
    from velyrix.controlplane.db import models

    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 800})  # axe is injected
    page = context.new_page()
    page.goto(f"{site.url}/")
    page.wait_for_url(f"{site.url}/console/sign-in")
    console_sign_in(page, site.url, "acme", "alice@acme.example")
    page.wait_for_url(f"{site.url}/console/clusters")  # the console's sign-in lands on the console
    page.goto(f"{site.url}/")
    page.wait_for_url(f"{site.url}/console/clusters")
    table = page.inner_text("#clusters")
    assert "acme-train" in table and site.foreign_cluster not in table
    assert axe_serious(page, "clusters") == []

    page.click("a.cluster")
    page.wait_for_url(f"{site.url}/console/clusters/{site.cluster_id}")
    before = page.inner_text("#phase")
    with site.served.app.state.sessionmaker() as s:  # the reconciler moves the cluster on
        cluster = s.get(models.Cluster, site.cluster_id)
        status.set_phase(cluster, "Allocating", actor="test", reason="nodes being chosen")
        s.commit()
    page.wait_for_function("document.getElementById('phase').textContent === 'Allocating'")  # over SSE
    assert before == "Pending" and "nodes being chosen" in page.inner_text("#events")
    assert "Allocating" in page.inner_text("#phases")  # the history arrives with the fragment
    assert axe_serious(page, "cluster") == []

    page.click("#node-grid")
    page.wait_for_selector("table.grid")
    grid = page.inner_text("main")
    assert "Scalable unit 0" in grid and "Scalable unit 1" in grid and "Rail 7" in grid
    bad = page.locator("tr.node.h-fatal")
    assert bad.count() == 1 and "XID 79" in bad.inner_text() and "1 DBE" in bad.inner_text()
    assert axe_serious(page, "node-grid") == []

    page.click("text=API keys")
    page.focus("#key-name")  # by keyboard: type the name, Tab to the role, Enter submits
    page.keyboard.type("from-the-console")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "key-role"
    page.select_option("#key-role", "viewer")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    page.wait_for_selector("#secret")
    secret = page.inner_text("#secret")
    assert httpx.get(f"{site.url}/v1/clusters", headers=_bearer(secret)).status_code == 200
    assert axe_serious(page, "api-keys") == []
    page.click("button[aria-label='Revoke key from-the-console']")
    page.wait_for_url(f"{site.url}/console/keys")
    row = page.locator("tr", has_text="from-the-console")
    assert row.locator(".state").inner_text() == "revoked"
    assert httpx.get(f"{site.url}/v1/clusters", headers=_bearer(secret)).status_code == 401
    context.close()
