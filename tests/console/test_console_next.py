"""``next`` through sign-in: a console deep link opened without a session goes to the sign-in page, on to
the tenant's single sign-on (SAML, against the test IdP of ``tests/identity/saml_idp.py``), and lands back
on that page; a ``next`` that is not a same-origin path under ``/console`` lands on ``/console/clusters``."""

from __future__ import annotations

import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.identity.conftest import Served, home, served  # noqa: F401  (fixtures)
from tests.identity.saml_idp import Idp, read_request, saml_idp
from tests.identity.test_saml_api import USERS, add_provider, make_tenant
from velyrix.controlplane.identity import login


@pytest.fixture
def idp(served: Served, tmp_path: Path) -> Iterator[Idp]:  # noqa: F811
    if shutil.which("xmlsec1") is None:
        pytest.skip("needs Debian's xmlsec1 (scripts/apt-packages.txt)")
    owner = make_tenant(served.app, "acme")
    with saml_idp(tmp_path, USERS) as found:
        add_provider(served.url, owner, found)
        yield found


def _sign_in_from(served: Served, idp: Idp, start: str) -> httpx.Response:  # noqa: F811
    """Follow the browser's redirects from ``start`` (no session) through the console's sign-in page and
    the IdP; the answer of the assertion consumer service (where the browser lands next)."""
    first = httpx.get(served.url + start, follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"].startswith("/console/sign-in?next="), first.text
    landing = urllib.parse.parse_qs(urllib.parse.urlsplit(first.headers["location"]).query)["next"][0]
    form = httpx.get(served.url + first.headers["location"])
    assert f'name="next" value="{login.console_target(landing)}"' in form.text
    sso = httpx.get(served.url + "/console/sign-in", params={"tenant": "acme", "next": landing}, follow_redirects=False)
    assert sso.status_code == 303 and sso.headers["location"].startswith("/auth/acme/login?next=")
    to_idp = httpx.get(served.url + sso.headers["location"], follow_redirects=True)
    request = read_request(str(to_idp.history[-1].headers["location"]))
    response = idp.respond(
        "alice@acme.example",
        acs=request.assertion_consumer_service_url,
        audience=request.issuer.text,
        in_response_to=request.id,
    )
    return httpx.post(request.assertion_consumer_service_url, data={"SAMLResponse": response}, follow_redirects=False)


def test_a_deep_link_lands_back_on_its_page_after_single_sign_on(served: Served, idp: Idp) -> None:  # noqa: F811
    done = _sign_in_from(served, idp, "/console/clusters/clu_42/nodes?view=rails")
    assert done.status_code == 303 and done.headers["location"] == "/console/clusters/clu_42/nodes?view=rails"
    cookie = done.cookies.get("velyrix_session")
    page = httpx.get(served.url + "/console/clusters", cookies={"velyrix_session": cookie or ""})
    assert page.status_code == 200 and "alice@acme.example" in page.text


@pytest.mark.parametrize(
    "attempt",
    [
        "https://evil.example/console",
        "//evil.example/console/clusters",
        "/\\evil.example/console",
        "/console/../ui",
        "/console/%2e%2e/ui",
        "/console//evil.example",
        "/consolex/clusters",
        "/ui",
        "javascript:alert(1)",
        "/console/clusters\r\nset-cookie: x=1",
    ],
)
def test_an_open_redirect_attempt_lands_on_the_clusters(served: Served, idp: Idp, attempt: str) -> None:  # noqa: F811
    assert login.console_target(attempt) == "/console/clusters"
    sso = httpx.get(served.url + "/console/sign-in", params={"tenant": "acme", "next": attempt}, follow_redirects=False)
    assert sso.headers["location"] == "/auth/acme/login?next=%2Fconsole%2Fclusters"
    # straight to the login route, past the console's sign-in page: the flow keeps only a console path
    to_idp = httpx.get(f"{served.url}/auth/acme/login", params={"next": attempt}, follow_redirects=True)
    request = read_request(str(to_idp.history[-1].headers["location"]))
    response = idp.respond(
        "alice@acme.example",
        acs=request.assertion_consumer_service_url,
        audience=request.issuer.text,
        in_response_to=request.id,
    )
    done = httpx.post(request.assertion_consumer_service_url, data={"SAMLResponse": response}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/console/clusters"


def test_without_next_the_login_lands_on_ui_as_before(served: Served, idp: Idp) -> None:  # noqa: F811
    to_idp = httpx.get(f"{served.url}/auth/acme/login", follow_redirects=True)
    request = read_request(str(to_idp.history[-1].headers["location"]))
    response = idp.respond(
        "alice@acme.example",
        acs=request.assertion_consumer_service_url,
        audience=request.issuer.text,
        in_response_to=request.id,
    )
    done = httpx.post(request.assertion_consumer_service_url, data={"SAMLResponse": response}, follow_redirects=False)
    assert done.headers["location"] == "/ui"
