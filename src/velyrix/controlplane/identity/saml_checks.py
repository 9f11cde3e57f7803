"""What a SAML response must show before pysaml2 even checks its signature, read from the raw XML with
defusedxml (no entities, no DTDs): exactly one assertion and no encrypted one, that assertion carrying its
own enveloped signature (its ``Reference`` names the assertion's ``ID``: a signature elsewhere in the
document, or over another element, is signature wrapping), the response's ``Destination`` and the
assertion's ``Recipient`` this ACS, its ``Audience`` this SP, and its validity window around now (within
``SKEW_S``). Every refusal is an ``IdentityError`` with a stable code (``identity_saml_*``, 401).

These checks only refuse; acceptance is pysaml2's signature verification in ``saml.verify`` too.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from dataclasses import dataclass
from typing import Any
from xml.etree import ElementTree

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeTree

from velyrix import errors

SKEW_S = 120
"""Clock skew tolerated on ``NotBefore``/``NotOnOrAfter`` (seconds)."""
MAX_RESPONSE_BYTES = 256 * 1024
"""Largest ``SAMLResponse`` form field accepted (base64 characters)."""
SAMLP = "{urn:oasis:names:tc:SAML:2.0:protocol}"
SAML = "{urn:oasis:names:tc:SAML:2.0:assertion}"
DS = "{http://www.w3.org/2000/09/xmldsig#}"
SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success"
STRONG = {
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha384",
    "http://www.w3.org/2001/04/xmldsig-more#rsa-sha512",
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256",
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384",
    "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512",
    "http://www.w3.org/2001/04/xmlenc#sha256",
    "http://www.w3.org/2001/04/xmldsig-more#sha384",
    "http://www.w3.org/2001/04/xmlenc#sha512",
}
"""Signature and digest algorithms accepted (SHA-1 is not: RFC 9231 section 2.3 calls it broken)."""


def refused(message: str, reason: str, hint: str | None = None) -> errors.IdentityError:
    return errors.IdentityError(message, reason=f"saml_{reason}", hint=hint)


@dataclass(frozen=True)
class Shape:
    """What the unverified response claims: the request it answers, its one assertion's id and the
    latest instant it may be used (UTC)."""

    in_response_to: str
    assertion_id: str
    not_on_or_after: dt.datetime


def decode(saml_response: str) -> Any:
    """The ``<samlp:Response>`` element of the base64 form field; ``saml_response_malformed`` otherwise."""
    if not saml_response or len(saml_response) > MAX_RESPONSE_BYTES:
        raise refused("SAMLResponse missing or larger than 256 KiB", "response_malformed")
    try:
        root = SafeTree.fromstring(base64.b64decode(saml_response, validate=False))
    except (binascii.Error, ValueError, ElementTree.ParseError, DefusedXmlException) as exc:
        raise refused(f"SAMLResponse is not base64 XML: {exc}", "response_malformed") from exc
    if root.tag != SAMLP + "Response":
        raise refused(f"expected a samlp:Response, got {root.tag}", "response_malformed")
    return root


def peek_in_response_to(root: Any) -> str:
    """The ``InResponseTo`` the response claims (unverified: only to find the login flow)."""
    value = root.get("InResponseTo") or ""
    if not value:
        raise refused("response answers no request of this service (no InResponseTo)", "unsolicited")
    return str(value)[:200]


def _time(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise refused(f"unreadable SAML instant {value[:40]!r}", "response_malformed") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _only_assertion(root: Any) -> Any:
    if list(root.iter(SAML + "EncryptedAssertion")):
        raise refused("encrypted assertions are not accepted", "response_malformed")
    found = list(root.iter(SAML + "Assertion"))
    if len(found) > 1:
        raise refused(f"response holds {len(found)} assertions (signature wrapping?)", "signature_wrapping")
    if not found or found[0] not in list(root):
        raise refused("response holds no assertion as its child", "response_malformed")
    return found[0]


def _check_signed(assertion: Any) -> str:
    """The assertion's ID when its own child ``ds:Signature`` references exactly it."""
    aid = assertion.get("ID") or ""
    sigs = [s for s in assertion if s.tag == DS + "Signature"]
    if not sigs:
        raise refused("the assertion is not signed", "unsigned", hint="the IdP must sign assertions")
    refs = [r.get("URI") for r in sigs[0].iter(DS + "Reference")]
    if len(sigs) > 1 or refs != [f"#{aid}"] or not aid:
        raise refused("the assertion's signature does not cover the assertion", "signature_wrapping")
    algs = [m.get("Algorithm") for m in sigs[0].iter() if m.tag in (DS + "SignatureMethod", DS + "DigestMethod")]
    if len(algs) != 2 or not set(algs) <= STRONG:
        raise refused(f"signature algorithms {algs} are not accepted", "weak_algorithm", hint="sign with RSA-SHA256")
    return str(aid)


def _check_window(not_before: dt.datetime | None, not_after: dt.datetime | None, now: dt.datetime) -> None:
    skew = dt.timedelta(seconds=SKEW_S)
    if not_after is None:
        raise refused("the assertion has no NotOnOrAfter", "response_malformed")
    if not_after + skew <= now:
        raise refused(f"the assertion expired at {not_after.isoformat()}", "expired", hint="log in again")
    if not_before is not None and not_before - skew > now:
        raise refused(f"the assertion is valid only from {not_before.isoformat()}", "not_yet_valid")


def check(root: Any, *, acs_url: str, entity_id: str, now: dt.datetime) -> Shape:
    """The ``Shape`` of a response fit to be verified, else the refusal naming what is wrong."""
    if root.get("Destination") != acs_url:
        raise refused(f"response is addressed to {root.get('Destination')!r}, not this ACS", "wrong_destination")
    status = root.find(f"{SAMLP}Status/{SAMLP}StatusCode")
    if status is None or status.get("Value") != SUCCESS:
        value = "none" if status is None else str(status.get("Value"))[:200]
        raise refused(f"the IdP did not vouch for the user (status {value})", "provider_refused")
    assertion = _only_assertion(root)
    aid = _check_signed(assertion)
    audiences = [a.text for a in assertion.iter(SAML + "Audience")]
    if entity_id not in audiences:
        raise refused(f"assertion is for {audiences!r}, not {entity_id!r}", "wrong_audience")
    confirmations = list(assertion.iter(SAML + "SubjectConfirmationData"))
    if not confirmations or any(c.get("Recipient") != acs_url for c in confirmations):
        raise refused("the assertion's Recipient is not this ACS", "wrong_recipient")
    irt = peek_in_response_to(root)
    if any(c.get("InResponseTo") != irt for c in confirmations):
        raise refused("the assertion answers another request than the response", "unsolicited")
    conditions = assertion.find(SAML + "Conditions")
    not_before = _time(conditions.get("NotBefore")) if conditions is not None else None
    ends = [_time(c.get("NotOnOrAfter")) for c in confirmations]
    ends += [_time(conditions.get("NotOnOrAfter"))] if conditions is not None else []
    known = [e for e in ends if e is not None]
    not_after = min(known) if known else None
    _check_window(not_before, not_after, now)
    assert not_after is not None
    return Shape(irt, aid, not_after)


MD = "{urn:oasis:names:tc:SAML:2.0:metadata}"
REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"


def check_metadata(xml: str, issuer: str) -> None:
    """``InvalidInputError`` (422) unless ``xml`` is IdP metadata of entity ``issuer`` with a signing
    certificate and a single sign-on service of the HTTP-Redirect binding (what a login needs)."""
    try:
        root = SafeTree.fromstring(xml.encode())
    except (ElementTree.ParseError, DefusedXmlException) as exc:
        raise errors.InvalidInputError(f"saml_metadata is not XML: {exc}", hint="the IdP's metadata XML") from exc
    if root.tag != MD + "EntityDescriptor" or root.get("entityID") != issuer:
        raise errors.InvalidInputError(
            f"saml_metadata describes entity {root.get('entityID')!r}, not the issuer {issuer!r}",
            hint="issuer must be the IdP's entityID",
        )
    idp = root.find(MD + "IDPSSODescriptor")
    certs = [] if idp is None else list(idp.iter(DS + "X509Certificate"))
    sso = [] if idp is None else [s for s in idp.iter(MD + "SingleSignOnService") if s.get("Binding") == REDIRECT]
    if not certs or not sso:
        raise errors.InvalidInputError(
            "saml_metadata lacks an IDPSSODescriptor with a signing certificate and an HTTP-Redirect "
            "SingleSignOnService",
            hint="export the metadata of the IdP's SAML application",
        )
