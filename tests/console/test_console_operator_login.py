"""Provider staff's first single sign-on, before any security key exists: the session reads nothing yet
(``identity/provider_staff.py``), so the login lands on the page that registers a key (``/ui/security``)
instead of a page that answers 403, whether it started at the console's sign-in page (``next``) or at
``/auth/<tenant>/login``; once signed in with a second factor, ``next`` is honoured again. Through the
provider tenant's SAML provider (the test IdP of ``tests/identity/saml_idp.py``), its group map making
``gpu-admins`` operators."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.identity.conftest import Served, home, served  # noqa: F401  (fixtures)
from tests.identity.saml_idp import Idp, read_request, saml_idp
from tests.identity.test_saml_api import USERS, make_tenant
from velyrix.controlplane.identity import sessions


@pytest.fixture
def staff_idp(served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Idp]:  # noqa: F811
    """Tenant acme is the provider's own (``VELYRIX_PROVIDER_TENANT``); its SAML provider maps operators."""
    if shutil.which("xmlsec1") is None:
        pytest.skip("needs Debian's xmlsec1 (scripts/apt-packages.txt)")
    monkeypatch.setenv("VELYRIX_PROVIDER_TENANT", "acme")
    owner = make_tenant(served.app, "acme")
    with saml_idp(tmp_path, USERS) as found:
        body = {
            "name": "corp",
            "kind": "saml",
            "issuer": found.entity_id,
            "saml_metadata": found.metadata(),
            "allowed_domains": ["acme.example"],
            "group_map": {"gpu-admins": "operator"},
            "default_role": "viewer",
        }
        made = httpx.post(
            f"{served.url}/v1/identity-providers", json=body, headers={"Authorization": f"Bearer {owner}"}
        )
        assert made.status_code == 201, made.text
        yield found


def _login(served: Served, idp: Idp, user: str, start: str) -> httpx.Response:  # noqa: F811
    """``user`` signs in from the console's sign-in page towards ``start`` (empty: straight at
    ``/auth/acme/login``, no ``next``); the assertion consumer service's answer."""
    if start:
        to_idp = httpx.get(
            f"{served.url}/console/sign-in", params={"tenant": "acme", "next": start}, follow_redirects=True
        )
    else:
        to_idp = httpx.get(f"{served.url}/auth/acme/login", follow_redirects=True)
    request = read_request(str(to_idp.history[-1].headers["location"]))
    response = idp.respond(
        user, acs=request.assertion_consumer_service_url, audience=request.issuer.text, in_response_to=request.id
    )
    return httpx.post(request.assertion_consumer_service_url, data={"SAMLResponse": response}, follow_redirects=False)


def _cookie(answer: httpx.Response) -> dict[str, str]:
    return {sessions.COOKIE: answer.cookies.get(sessions.COOKIE) or ""}


def test_an_operators_first_login_lands_on_the_security_key_page(served: Served, staff_idp: Idp) -> None:  # noqa: F811
    done = _login(served, staff_idp, "alice@acme.example", "/console/fleet")
    assert done.status_code == 303 and done.headers["location"] == "/ui/security", done.headers
    cookie = _cookie(done)
    assert httpx.get(served.url + "/console/fleet", cookies=cookie).status_code == 403  # why it did not go there
    page = httpx.get(served.url + "/ui/security", cookies=cookie)
    assert page.status_code == 200 and "alice@acme.example" in page.text and "register-key" in page.text

    direct = _login(served, staff_idp, "alice@acme.example", "")  # no next: /ui would answer 403
    assert direct.status_code == 303 and direct.headers["location"] == "/ui/security"
    assert httpx.get(served.url + "/ui", cookies=_cookie(direct)).status_code == 403


def test_a_tenant_users_login_still_lands_where_it_was_going(served: Served, staff_idp: Idp) -> None:  # noqa: F811
    """A viewer of the provider's tenant (a tenant role: it reads without a second factor)."""
    done = _login(served, staff_idp, "bob@acme.example", "/console/clusters/clu_1")
    assert done.status_code == 303 and done.headers["location"] == "/console/clusters/clu_1"
    assert _login(served, staff_idp, "bob@acme.example", "").headers["location"] == "/ui"
