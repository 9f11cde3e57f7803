"""Invoices, credit notes and SLA reports in the console, produced by the product's billing run: a cluster
delivered before November whose two nodes go down for four hours (states written through the fleet's
``transition()``, as tests/noc/test_scripted_month.py does), November and December closed through
``POST /v1/billing-months``. The pages show what the API answers: November's missed target and its credit
note, applied to December's invoice. Another tenant's invoice and credit note stay invisible."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.controlplane.conftest import auth
from velyrix.controlplane.identity import sessions

UTC = dt.UTC


def at(day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, tzinfo=UTC)


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tests.noc.test_scripted_month import deliver, down
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import login
    from velyrix.ops.service import create_app

    app = create_app(f"sqlite:///{tmp_path_factory.mktemp('bill') / 'bill.db'}")
    with app.state.sessionmaker() as s:
        acme, other = models.Tenant(name="acme", display_name="Acme"), models.Tenant(name="other", display_name="O")
        s.add_all([acme, other])
        s.flush()
        _, nodes = deliver(s, acme, "acme-train", "hgx-h100-8g", 2)
        down(s, nodes[0], at(8), at(8, 4))
        down(s, nodes[1], at(8), at(8, 4))
        _, theirs = deliver(s, other, "other-train", "hgx-h100-8g", 1)
        down(s, theirs[0], at(3), at(7))
        operator = principals.issue_key(s, tenant_id=None, name="noc", role="operator")[1]
        keys = {
            t.name: principals.issue_key(s, tenant_id=t.id, name=f"{t.name}-b", role="billing")[1]
            for t in (acme, other)
        }
        cookies = {}
        for role in ("billing", "viewer"):
            user = User(tenant_id=acme.id, user_name=f"{role}@acme.example", role=role)
            s.add(user)
            s.flush()
            cookies[role] = login.start_session(s, user, "oidc", mfa=True)[1]
        s.commit()
    with TestClient(app, base_url="https://testserver") as client:
        for m in ("2026-11", "2026-12"):
            closed = client.post("/v1/billing-months", json={"month": m}, headers=auth(operator))
            assert closed.status_code == 201, closed.text
        yield client, keys, cookies
    app.state.engine.dispose()


def _page(client: TestClient, cookie: str, url: str) -> Any:
    return client.get(url, headers={"cookie": f"{sessions.COOKIE}={cookie}"}, follow_redirects=False)


def test_the_invoice_shows_its_lines_and_the_sla_credit_applied(month: Any) -> None:
    client, keys, cookies = month
    api = {i["month"]: i for i in client.get("/v1/invoices", headers=auth(keys["acme"])).json()["items"]}
    december = api["2026-12"]
    assert december["credits"], "the product's billing run applied November's credit"
    listing = _page(client, cookies["billing"], "/console/invoices")
    assert listing.status_code == 200 and december["number"] in listing.text
    page = _page(client, cookies["billing"], f"/console/invoices/{december['id']}")
    assert page.status_code == 200
    for line in december["lines"]:
        assert f'<td class="num">{line["amount_usd"]}</td>' in page.text
    (credit,) = december["credits"]
    assert f'href="/console/credit-notes/{credit["credit_note_id"]}">{credit["number"]}<' in page.text
    assert f'<td class="num">-{credit["amount_usd"]}</td>' in page.text
    assert f'id="total">{december["total_usd"]}<' in page.text
    assert f'id="credits-applied">{december["credits_applied_usd"]}<' in page.text


def test_the_credit_note_shows_the_availability_behind_it(month: Any) -> None:
    client, keys, cookies = month
    (note,) = client.get("/v1/credit-notes", headers=auth(keys["acme"])).json()["items"]
    page = _page(client, cookies["billing"], f"/console/credit-notes/{note['id']}")
    assert page.status_code == 200 and "acme-train" in page.text
    shown = note["evidence"]["availability"]["availability_percent"]
    assert f'id="availability">{shown} %' in page.text and f'id="amount">{note["amount_usd"]} USD' in page.text
    (applied,) = note["applications"]
    assert f'href="/console/invoices/{applied["invoice_id"]}">{applied["number"]}<' in page.text


def test_the_sla_report_of_the_month_shows_the_missed_target(month: Any) -> None:
    client, keys, cookies = month
    page = _page(client, cookies["billing"], "/console/sla-reports?month=2026-11")
    assert page.status_code == 200
    row = re.search(r'<tr class="h-fatal">\s*<td>acme-train</td><td class="num">([0-9.]+) %', page.text)
    assert row is not None, page.text[-3000:]
    tenant_id = client.get("/v1/invoices", headers=auth(keys["acme"])).json()["items"][0]["tenant_id"]
    api = client.get(f"/v1/sla-reports/{tenant_id}?month=2026-11", headers=auth(keys["acme"])).json()
    assert row[1] == api["clusters"][0]["availability_percent"] and api["clusters"][0]["met"] is False
    assert "other-train" not in page.text
    bad = _page(client, cookies["billing"], "/console/sla-reports?month=2026-13")
    assert bad.status_code == 422 and "YYYY-MM" in bad.text


def test_a_viewer_does_not_see_billing_and_no_one_sees_another_tenant_s(month: Any) -> None:
    client, keys, cookies = month
    assert _page(client, cookies["viewer"], "/console/invoices").status_code == 403
    theirs = client.get("/v1/invoices", headers=auth(keys["other"])).json()["items"][0]
    answer = _page(client, cookies["billing"], f"/console/invoices/{theirs['id']}")
    assert answer.status_code == 404 and theirs["number"] not in answer.text
    note = client.get("/v1/credit-notes", headers=auth(keys["other"])).json()["items"][0]
    assert _page(client, cookies["billing"], f"/console/credit-notes/{note['id']}").status_code == 404
