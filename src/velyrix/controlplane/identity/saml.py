"""SAML 2.0 service provider (SP-initiated, pysaml2 with Debian's xmlsec1): one SP per tenant identity
provider of kind ``saml``, its entity id ``<base>/auth/saml/<provider id>/metadata`` and its assertion
consumer service ``<base>/auth/saml/<provider id>/acs`` (HTTP-POST binding); the AuthnRequest goes to the
IdP's single sign-on service of its metadata by HTTP-Redirect.

A response is accepted only when ``saml_checks.check`` finds its shape right and pysaml2 verifies the
assertion's signature against the IdP metadata's certificate, the audience, recipient, ``InResponseTo``
(the login flow's request id) and validity (``SKEW_S`` of clock skew); then its id is remembered until
``NotOnOrAfter`` (a replay is refused), and NameID plus attributes become a tenant user through the OIDC
mapping (``oidc.identity``: allowed domains, group-to-role map).
"""

from __future__ import annotations

import datetime as dt
import shutil
from typing import Any

import sqlalchemy as sa
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS
from sqlalchemy import orm
from sqlalchemy.exc import IntegrityError

from velyrix import errors
from velyrix.controlplane.db.models.identity import IdentityProvider, SeenAssertion
from velyrix.controlplane.identity import oidc
from velyrix.controlplane.identity.saml_checks import SKEW_S, Shape, refused

XMLSEC1 = "/usr/bin/xmlsec1"
EMAIL_ATTRIBUTES = ("email", "mail", "emailAddress", "urn:oid:0.9.2342.19200300.100.1.3")
NAME_ATTRIBUTES = ("displayName", "name", "cn")
MAX_EMAIL = 254


def entity_id(base: str, provider: IdentityProvider) -> str:
    """The SP entity id Velyrix presents to the IdP of ``provider`` (``base``: the server's URL)."""
    return f"{base.rstrip('/')}/auth/saml/{provider.id}/metadata"


def acs_url(base: str, provider: IdentityProvider) -> str:
    return f"{base.rstrip('/')}/auth/saml/{provider.id}/acs"


def client(provider: IdentityProvider, base: str) -> Saml2Client:
    """A pysaml2 SP client for ``provider``: assertions must be signed, unsolicited responses refused."""
    if shutil.which(XMLSEC1) is None:
        raise errors.IdentityError(
            "xmlsec1 is not installed on this server",
            reason="saml_unavailable",
            status=503,
            hint="apt-get install xmlsec1",
        )
    conf = SPConfig()
    conf.load(
        {
            "entityid": entity_id(base, provider),
            "xmlsec_binary": XMLSEC1,
            "accepted_time_diff": SKEW_S,
            "allow_unknown_attributes": True,
            "metadata": {"inline": [provider.saml_metadata]},
            "service": {
                "sp": {
                    "endpoints": {"assertion_consumer_service": [(acs_url(base, provider), BINDING_HTTP_POST)]},
                    "want_assertions_signed": True,
                    "want_response_signed": False,
                    "allow_unsolicited": False,
                    "authn_requests_signed": False,
                    "name_id_format": NAMEID_FORMAT_EMAILADDRESS,
                }
            },
        }
    )
    return Saml2Client(conf)


def start(provider: IdentityProvider, base: str, relay_state: str) -> tuple[str, str]:
    """``(request id, redirect URL)`` of an AuthnRequest to the IdP of ``provider`` (HTTP-Redirect)."""
    try:
        request_id, info = client(provider, base).prepare_for_authenticate(
            entityid=provider.issuer, relay_state=relay_state, binding=BINDING_HTTP_REDIRECT
        )
    except Exception as exc:  # pysaml2 raises bare exceptions for a metadata without this IdP or binding
        raise errors.IdentityError(
            f"the IdP metadata cannot start a login: {str(exc)[:200]}", reason="saml_metadata_invalid", status=502
        ) from exc
    location = dict(info["headers"])["Location"]
    return str(request_id), str(location)


def verify(provider: IdentityProvider, base: str, saml_response: str, shape: Shape) -> Any:
    """pysaml2's verified ``AuthnResponse`` for the request ``shape.in_response_to``; its one assertion
    must be the one ``saml_checks`` looked at. ``saml_signature_invalid`` or ``saml_response_invalid``."""
    sp = client(provider, base)
    try:
        parsed = sp.parse_authn_request_response(
            saml_response, BINDING_HTTP_POST, outstanding={shape.in_response_to: "/"}
        )
    except Exception as exc:  # pysaml2 signals most refusals with bare Exception/ValueError
        name = type(exc).__name__
        reason = "signature_invalid" if "Sign" in name or "signature" in str(exc).lower() else "response_invalid"
        raise refused(f"the SAML response does not verify ({name}: {str(exc)[:200]})", reason) from exc
    if parsed is None or parsed.assertion is None or parsed.assertion.id != shape.assertion_id:
        raise refused("the verified assertion is not the one the response shows", "signature_wrapping")
    if parsed.issuer() != provider.issuer:
        raise refused(f"assertion issued by {parsed.issuer()!r}, not {provider.issuer!r}", "wrong_issuer")
    return parsed


def remember(session: orm.Session, shape: Shape, now: dt.datetime) -> None:
    """Record the assertion id until it expires (forgetting expired ones); ``saml_replayed`` when seen."""
    session.execute(sa.delete(SeenAssertion).where(SeenAssertion.expires_at <= now))
    if session.get(SeenAssertion, shape.assertion_id) is not None:
        raise refused("this assertion was already used to log in (a replay)", "replayed")
    expires = shape.not_on_or_after + dt.timedelta(seconds=SKEW_S)
    try:
        with session.begin_nested():  # a concurrent login with the same assertion id loses here
            session.add(SeenAssertion(assertion_id=shape.assertion_id, expires_at=expires))
    except IntegrityError as error:
        raise refused("this assertion was already used to log in (a replay)", "replayed") from error


def _first(ava: dict[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        values = ava.get(name)
        if isinstance(values, list) and values and isinstance(values[0], str):
            return values[0]
    return None


def identity(provider: IdentityProvider, parsed: Any, *, provider_roles: bool = False) -> oidc.Identity:
    """The user of a verified response: e-mail from an e-mail attribute or the e-mail NameID, groups
    from the ``groups_claim`` attribute, role by the provider's maps (``oidc.identity`` rules)."""
    ava: dict[str, Any] = parsed.get_identity() or {}
    name_id = parsed.name_id
    subject = str(getattr(name_id, "text", "") or "")[:300]
    email = _first(ava, EMAIL_ATTRIBUTES)
    if email is None and getattr(name_id, "format", None) == NAMEID_FORMAT_EMAILADDRESS:
        email = subject
    if email is not None and len(email) > MAX_EMAIL:
        email = None  # no address is that long (RFC 5321 section 4.5.3.1.3): treated as missing
    claims = {
        "sub": subject,
        "email": email,
        "name": _first(ava, NAME_ATTRIBUTES) or email,
        provider.groups_claim or "groups": ava.get(provider.groups_claim or "groups", []),
    }
    if provider.role_claim:
        claims[provider.role_claim] = ava.get(provider.role_claim)
    return oidc.identity(provider, claims, provider_roles=provider_roles)
