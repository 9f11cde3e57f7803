"""The tenant's journey in headless Debian Chromium (one browser for the module, tests/identity/browser.py),
against what ``velyrix up`` runs: the app of ``velyrix.ops.service`` on a real uvicorn, a twin of us-east-1
with 68 H200 nodes (the seed's 64 and the spares held back) and the reconciler driving it.

A user of tenant acme signs in through the tenant's OpenID provider (the npm ``oidc-provider``), registers a
security key (Chromium's virtual authenticator through CDP WebAuthn, user verification on), signs in again
with it, applies the seed cluster from the console (the plan and its price first), watches its phases reach
Ready live over server-sent events (the page is never reloaded), opens the node grid, downloads the signed
acceptance report and verifies it with ``velyrix verify acceptance``, creates and revokes an API key, and
reads an invoice with an SLA credit. axe-core finds no serious or critical violation in any page at 1280x800.

The reconciler starts once the new cluster's page shows Pending, so every later phase reaches the open page
over SSE.

The invoice is the product's billing run over a seeded history: a cluster of two H100 nodes in eu-west-1
(outside the twin the reconciler drives) delivered in September, both nodes down for four hours in October,
written through the fleet's ``transition()`` at those past times as tests/noc/test_scripted_month.py does
(the twin's clock starts today). October and November are then closed through ``POST /v1/billing-months``,
which issues October's credit note and applies it to November's invoice."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.console.test_console_browser import axe_serious
from tests.controlplane.conftest import auth
from tests.identity.browser import (  # noqa: F401  (fixture: browser)
    add_oidc_idp,
    browser,
    console_sign_in,
    oidc_idp,
    security_key,
)
from tests.identity.conftest import Served
from tests.identity.oidc_provider import oidc_provider

TWIN_NODES = 68
"""The seed's 64 nodes and the region's spares (5% of the fleet, rounded up, held back)."""
ACCOUNTS = {"alice@acme.example": {"name": "Alice", "groups": ["gpu-admins"]}}
UTC = dt.UTC


@dataclass
class Site:
    served: Served
    url: str
    owner: str
    home: Path
    runtime: Any
    """The twin's runtime: its nodes enrolled; its reconciler starts once the cluster page is open."""


def _history(app: Any, tenant_id: str) -> None:
    """Two H100 nodes of tenant acme in eu-west-1 delivered on 2026-09-20, both down 2026-10-08 00:00-04:00."""
    from tests.noc.test_scripted_month import move
    from velyrix.controlplane.db import models
    from velyrix.fleet import states

    t0 = dt.datetime(2026, 9, 20, tzinfo=UTC)
    with app.state.sessionmaker() as s:
        cluster = models.Cluster(
            tenant_id=tenant_id,
            name="acme-finetune",
            region="eu-west-1",
            node_type="hgx-h100-8g",
            node_count=2,
            spec={},
            plan={},
        )
        s.add(cluster)
        s.flush()
        for i in range(2):
            node = models.Node(name=f"acme-finetune-n{i}", region="eu-west-1", node_type="hgx-h100-8g")
            s.add(node)
            s.flush()
            for state in (states.INSPECTING, states.AVAILABLE, states.PRODUCTION):
                move(s, node, state, t0)
            node.cluster_id, node.tenant_id = cluster.id, tenant_id
            for state in (states.ALLOCATED, states.PROVISIONING, states.ACTIVE):
                move(s, node, state, t0)
            move(s, node, states.QUARANTINED, dt.datetime(2026, 10, 8, tzinfo=UTC))
            move(s, node, states.PRODUCTION, dt.datetime(2026, 10, 8, 4, tzinfo=UTC))
        s.commit()


def _wait_for_intake(app: Any, count: int, timeout_s: float = 120.0) -> None:
    """Until the twin's intake has made ``count`` H200 nodes free for clusters."""
    import sqlalchemy as sa

    from velyrix.controlplane.db import models

    deadline = time.monotonic() + timeout_s
    while True:
        with app.state.sessionmaker() as s:
            free = s.scalar(
                sa.select(sa.func.count()).where(
                    models.Node.node_type == "hgx-h200-8g",
                    models.Node.fleet_stage == "production",
                    models.Node.provisioning_state == "available",
                )
            )
        if free >= count:
            return
        assert time.monotonic() < deadline, f"the twin's intake freed {free} of {count} nodes"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.controlplane.reconcile import phases
    from velyrix.controlplane.reconcile.runtime import FleetRuntime
    from velyrix.ops.service import create_app

    home = tmp_path_factory.mktemp("journey")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_HOME", str(home))
        mp.setenv("VELYRIX_SIGNING_KEY_DIR", str(home / "keys"))
        mp.delenv("VELYRIX_DATABASE_URL", raising=False)
        app = create_app(f"sqlite:///{home / 'velyrix.db'}")
        runtime = FleetRuntime.twin(
            app.state.sessionmaker,
            "us-east-1",
            node_counts={"hgx-h200-8g": TWIN_NODES},
            seed=5,
            delays=False,
            settings=phases.ReconcileSettings(poll_s=0.05, idle_s=0.2),
        )
        runtime.attach(app)
        with app.state.sessionmaker() as s:
            tenant = models.Tenant(name="acme", display_name="Acme")
            s.add(tenant)
            s.flush()
            owner = principals.issue_key(s, tenant_id=tenant.id, name="acme owner", role="owner")[1]
            operator = principals.issue_key(s, tenant_id=None, name="noc", role="operator")[1]
            s.commit()
            tenant_id = tenant.id
        _history(app, tenant_id)
        with Served(app) as served:
            url = f"http://localhost:{served.port}"
            for month in ("2026-10", "2026-11"):  # the billing run: October's credit lands on November's invoice
                closed = httpx.post(f"{url}/v1/billing-months", json={"month": month}, headers=auth(operator))
                assert closed.status_code == 201, closed.text
            runtime.enroll()  # the twin's intake; the reconciler starts in the test, once the page is open
            try:
                _wait_for_intake(app, 64)
                with oidc_provider([f"{url}/auth/oidc/callback"], ACCOUNTS, home / "oidc.log") as issuer:
                    add_oidc_idp(url, owner, oidc_idp(issuer, "acme.example", {"gpu-admins": "owner"}))
                    yield Site(served, url, owner, home, runtime)
            finally:
                runtime.stop()


def _sign_in(page: Any, site: Site) -> None:
    console_sign_in(page, site.url, "acme", "alice@acme.example")


def _sign_in_with_a_security_key(context: Any, page: Any, site: Site) -> None:
    cdp, authenticator = security_key(context, page)
    _sign_in(page, site)
    page.wait_for_url(f"{site.url}/console/clusters")  # no key yet: signed in, changes wait for a second factor
    page.goto(f"{site.url}/ui")
    page.click("#security")
    page.click("#register-key")
    page.wait_for_selector("#status:has-text('registered')")
    page.goto(f"{site.url}/ui")
    page.click("#logout")
    page.wait_for_selector("text=signed out")
    context.clear_cookies()  # the provider's session too: a full sign-in again
    _sign_in(page, site)
    page.wait_for_url(f"{site.url}/auth/mfa")
    page.click("#use-key")
    page.wait_for_url(f"{site.url}/console/clusters")  # the console's sign-in lands back in the console
    assert cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"][0]["signCount"] >= 1


def _apply_the_seed(page: Any, site: Site) -> str:
    """Plan and apply the seed from the console; returns the cluster's id once its page shows Ready, live."""
    page.goto(f"{site.url}/console/apply")
    assert 'name       = "acme-pretrain"' in page.input_value("#apply-hcl")
    assert axe_serious(page, "apply") == []
    page.click("#plan")
    page.wait_for_selector("#plan-cost")
    price = page.inner_text("#monthly-usd")
    assert float(price.replace(",", "")) > 0
    assert axe_serious(page, "apply-plan") == []
    page.click("#apply")
    page.wait_for_url(lambda u: "/console/clusters/" in u)
    cluster_id = page.url.rsplit("/", 1)[1]
    assert page.inner_text("#phase") == "Pending"  # declared; nothing reconciles yet
    page.evaluate("window.stillThisPage = true")  # gone if the page were reloaded
    site.runtime.start()  # the reconciler drives the twin from here
    deadline = time.monotonic() + 600
    while (phase := page.inner_text("#phase")) != "Ready":
        assert phase != "Failed", page.inner_text("#events")
        assert time.monotonic() < deadline, f"still {phase}: {page.inner_text('#events')[:500]}"
        page.wait_for_timeout(250)
    page.wait_for_selector("#acceptance")  # the signed report's link arrives with the status fragment
    assert page.evaluate("window.stillThisPage === true")  # Ready and the link arrived over SSE, not by a reload
    history = page.inner_text("#phases")
    assert all(p in history for p in ("Allocating", "Provisioning", "Networking", "Validating", "Ready"))
    assert axe_serious(page, "cluster-ready") == []
    return cluster_id


def _acceptance(page: Any, site: Site, tmp_path: Path) -> None:
    with page.expect_download() as got:
        page.click("#acceptance")
    path = tmp_path / got.value.suggested_filename
    got.value.save_as(str(path))
    key = httpx.get(f"{site.url}/v1/acceptance/keys/us-east-1", headers=auth(site.owner)).json()["public_key"]
    env = {**os.environ, "VELYRIX_HOME": str(site.home / "cli")}
    done = subprocess.run(
        [sys.executable, "-m", "velyrix.cli.main", "verify", "acceptance", str(path), "--public-key", key],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0 and "valid" in done.stdout and "64 nodes" in done.stdout, done.stdout + done.stderr
    signed = json.loads(path.read_text())
    signed["report"]["passed"] = not signed["report"]["passed"]
    path.write_text(json.dumps(signed))
    tampered = subprocess.run(
        [sys.executable, "-m", "velyrix.cli.main", "verify", "acceptance", str(path), "--public-key", key],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert tampered.returncode == 1 and "INVALID" in tampered.stdout


def _key(page: Any, site: Site) -> None:
    page.click("text=API keys")
    page.fill("#key-name", "from-the-journey")
    page.select_option("#key-role", "viewer")
    page.click("#create")
    page.wait_for_selector("#secret")
    secret = page.inner_text("#secret")
    assert httpx.get(f"{site.url}/v1/clusters", headers=auth(secret)).status_code == 200
    page.click("button[aria-label='Revoke key from-the-journey']")
    page.wait_for_url(f"{site.url}/console/keys")
    assert page.locator("tr", has_text="from-the-journey").locator(".state").inner_text() == "revoked"
    assert httpx.get(f"{site.url}/v1/clusters", headers=auth(secret)).status_code == 401


def _invoice(page: Any, site: Site) -> None:
    invoices = httpx.get(f"{site.url}/v1/invoices", headers=auth(site.owner)).json()["items"]
    november = next(i for i in invoices if i["month"] == "2026-11")
    (credit,) = november["credits"]
    page.click("text=Invoices")
    page.wait_for_selector("#invoices")
    assert axe_serious(page, "invoices") == []
    page.click(f"a.invoice:has-text('{november['number']}')")
    page.wait_for_selector("#credits")
    assert page.inner_text("#total") == november["total_usd"]
    assert f"-{credit['amount_usd']}" in page.inner_text("#credits")
    assert axe_serious(page, "invoice") == []
    page.click(f"#credits a.credit-note:has-text('{credit['number']}')")
    page.wait_for_selector("#credit")
    assert "acme-finetune" in page.inner_text("main") and november["number"] in page.inner_text("#applications")
    assert axe_serious(page, "credit-note") == []
    page.goto(f"{site.url}/console/sla-reports?month=2026-10")
    assert "missed" in page.inner_text("#sla")
    assert axe_serious(page, "sla-report") == []
    page.goto(f"{site.url}/console/volumes")
    volumes = page.inner_text("main")  # the seed's storage, as the reconciler created it
    assert "acme-pretrain-parallel-fs" in volumes and "800.0 TB in 1 volume" in volumes
    assert "acme-pretrain-object" in volumes and "2,000.0 TB in 1 volume" in volumes
    assert axe_serious(page, "volumes") == []


def _usage(page: Any, site: Site, cluster_id: str) -> None:
    """A job on one node of the seed (its job mapping written as the Slurm prolog writes it), the twin's node
    agents reporting while its clock moves on: the usage page shows its team's GPU-hours, chart and table."""
    import sqlalchemy as sa

    from velyrix.agent import jobs
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.usage import JobUsage
    from velyrix.ops import twin_agents

    app, sim = site.served.app, site.runtime.sim
    with app.state.sessionmaker() as s:
        node = s.scalars(sa.select(models.Node.name).where(models.Node.cluster_id == cluster_id)).first()
    root = site.home / "jobmap"
    jobs.write_prolog(root / node, "1001", list(range(8)), user="alice", team="pretrain", cost_center="research")
    sim.nodes[node].load_pct = 90.0
    agents = twin_agents.TwinAgents(app.state.sessionmaker, sim, site.url, interval_s=0.5, job_map_root=root)
    agents.start()
    try:
        deadline = time.monotonic() + 120
        while True:
            with app.state.sessionmaker() as s:
                row = s.scalar(sa.select(JobUsage).where(JobUsage.hpc_job == "1001"))
                if row is not None and row.busy_gpu_s > 0:
                    break
            assert time.monotonic() < deadline, "no usage metered from the agents' reports"
            sim.advance(300.0)
            time.sleep(0.5)
    finally:
        agents.stop()
    page.click("text=Usage")
    page.wait_for_selector("#chart-team")
    assert "pretrain" in page.inner_text("#usage-team-table") and "research" in page.inner_text(
        "#usage-cost-center-table"
    )
    assert axe_serious(page, "usage") == []


def test_the_tenant_s_journey(browser: Any, site: Site, tmp_path: Path) -> None:  # noqa: F811
    context = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 800}, accept_downloads=True)
    page = context.new_page()
    _sign_in_with_a_security_key(context, page, site)
    cluster_id = _apply_the_seed(page, site)
    page.click("#node-grid")
    page.wait_for_selector("table.grid")
    assert page.locator("tr.node").count() == 64
    assert page.locator("td.job .idle").count() == 64  # no job runs yet
    assert axe_serious(page, "node-grid-64") == []
    page.goto(f"{site.url}/console/clusters/{cluster_id}")
    _acceptance(page, site, tmp_path)
    _key(page, site)
    _invoice(page, site)
    _usage(page, site, cluster_id)
    context.close()
