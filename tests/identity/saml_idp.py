"""A SAML 2.0 identity provider for the tests, on loopback: pysaml2 (as a library) reads the AuthnRequest
of the HTTP-Redirect binding and signs assertions with xmlsec1, with an RSA key and a self-signed
certificate made here with ``cryptography``. ``GET /sso`` shows a login form; its post answers the
service provider's ACS with an auto-submitting HTTP-POST form. ``respond`` builds (and signs, unless
told not to) any response a test needs, including bad ones."""

from __future__ import annotations

import base64
import datetime as dt
import html
import secrets
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import samlp
from saml2.s_utils import decode_base64_and_inflate
from saml2.sigver import CryptoBackendXmlSec1, pre_signature_part
from saml2.xmldsig import DIGEST_SHA1, DIGEST_SHA256, SIG_RSA_SHA1, SIG_RSA_SHA256

ASSERTION = "urn:oasis:names:tc:SAML:2.0:assertion:Assertion"
EMAIL_FORMAT = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"


def _instant(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_key(folder: Path) -> tuple[Path, str]:
    """``(key PEM path, certificate base64 DER)`` of a fresh RSA-2048 signing key, valid for a day."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Velyrix test IdP")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    path = folder / "idp.key"
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return path, base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()


@dataclass
class Idp:
    """The IdP: its entity id, signing key, users (e-mail: attributes) and the URL it serves at."""

    entity_id: str
    key_file: Path
    cert_b64: str
    users: dict[str, dict[str, Any]]
    url: str = ""
    requests: list[Any] = field(default_factory=list)

    def metadata(self) -> str:
        """The IdP metadata XML Velyrix is configured with (signing certificate, SSO by HTTP-Redirect)."""
        return (
            '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" '
            f'xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="{self.entity_id}">'
            '<md:IDPSSODescriptor WantAuthnRequestsSigned="false" '
            'protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
            '<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>'
            f"{self.cert_b64}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>"
            f"<md:NameIDFormat>{EMAIL_FORMAT}</md:NameIDFormat>"
            '<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" '
            f'Location="{self.url}/sso"/></md:IDPSSODescriptor></md:EntityDescriptor>'
        )

    def assertion_xml(self, email: str, *, acs: str, audience: str, in_response_to: str, **opt: Any) -> str:
        """An unsigned assertion about ``email`` (``lifetime_s``, ``shift_s``: its window around now;
        ``assertion_id``: a fixed id; ``recipient``: another Recipient than ``acs``)."""
        now = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=opt.get("shift_s", 0))
        end = now + dt.timedelta(seconds=opt.get("lifetime_s", 300))
        aid = opt.get("assertion_id") or "_a" + secrets.token_hex(16)
        user = self.users.get(email, {})
        values = {"email": [email], "displayName": [user.get("name", email)], "groups": user.get("groups", [])}
        attributes = "".join(
            f'<saml:Attribute Name="{n}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic">'
            + "".join(f'<saml:AttributeValue xsi:type="xs:string">{html.escape(v)}</saml:AttributeValue>' for v in vs)
            + "</saml:Attribute>"
            for n, vs in values.items()
            if vs
        )
        return (
            '<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" '
            'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
            f'ID="{aid}" Version="2.0" IssueInstant="{_instant(now)}">'
            f"<saml:Issuer>{self.entity_id}</saml:Issuer>"
            f'<saml:Subject><saml:NameID Format="{EMAIL_FORMAT}">{html.escape(email)}</saml:NameID>'
            '<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">'
            f'<saml:SubjectConfirmationData InResponseTo="{in_response_to}" NotOnOrAfter="{_instant(end)}" '
            f'Recipient="{opt.get("recipient", acs)}"/></saml:SubjectConfirmation></saml:Subject>'
            f'<saml:Conditions NotBefore="{_instant(now - dt.timedelta(seconds=30))}" NotOnOrAfter="{_instant(end)}">'
            f"<saml:AudienceRestriction><saml:Audience>{audience}</saml:Audience></saml:AudienceRestriction>"
            "</saml:Conditions>"
            f'<saml:AuthnStatement AuthnInstant="{_instant(now)}" SessionIndex="{aid}"><saml:AuthnContext>'
            "<saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:Password</saml:AuthnContextClassRef>"
            "</saml:AuthnContext></saml:AuthnStatement>"
            f"<saml:AttributeStatement>{attributes}</saml:AttributeStatement></saml:Assertion>"
        )

    def sign(self, assertion: str, *, sha1: bool = False, embed_cert: bool = False) -> str:
        """``assertion`` with its enveloped signature (RSA-SHA256 over its ``ID``, by xmlsec1; ``sha1``:
        RSA-SHA1, which Velyrix refuses; ``embed_cert``: the certificate in its ``KeyInfo``)."""
        aid = assertion.split('ID="', 1)[1].split('"', 1)[0]
        algs = (DIGEST_SHA1, SIG_RSA_SHA1) if sha1 else (DIGEST_SHA256, SIG_RSA_SHA256)
        part = pre_signature_part(aid, self.cert_b64 if embed_cert else None, digest_alg=algs[0], sign_alg=algs[1])
        template = str(part).split("?>", 1)[-1]
        at = assertion.index("</saml:Issuer>") + len("</saml:Issuer>")
        unsigned = assertion[:at] + template + assertion[at:]
        signed = CryptoBackendXmlSec1("/usr/bin/xmlsec1").sign_statement(unsigned, ASSERTION, str(self.key_file), aid)
        return str(signed).split("?>", 1)[-1] if str(signed).startswith("<?xml") else str(signed)

    def response_xml(self, assertions: str, *, acs: str, in_response_to: str, destination: str | None = None) -> str:
        return (
            '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" '
            'xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" '
            f'ID="_r{secrets.token_hex(16)}" Version="2.0" IssueInstant="{_instant(dt.datetime.now(dt.UTC))}" '
            f'Destination="{destination or acs}" InResponseTo="{in_response_to}">'
            f"<saml:Issuer>{self.entity_id}</saml:Issuer>"
            '<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>'
            f"{assertions}</samlp:Response>"
        )

    def respond(self, email: str, *, acs: str, audience: str, in_response_to: str, **opt: Any) -> str:
        """The base64 ``SAMLResponse`` of a login of ``email`` (``signed=False``: unsigned assertion)."""
        assertion = self.assertion_xml(email, acs=acs, audience=audience, in_response_to=in_response_to, **opt)
        if opt.get("signed", True):
            assertion = self.sign(assertion, sha1=opt.get("sha1", False), embed_cert=opt.get("embed_cert", False))
        xml = self.response_xml(assertion, acs=acs, in_response_to=in_response_to, destination=opt.get("destination"))
        return base64.b64encode(xml.encode()).decode()


def read_request(query: str) -> Any:
    """The AuthnRequest (pysaml2 object) of an HTTP-Redirect ``SAMLRequest`` query string."""
    params = urllib.parse.parse_qs(urllib.parse.urlsplit(query).query)
    return samlp.authn_request_from_string(decode_base64_and_inflate(params["SAMLRequest"][0]))


def _handler(idp: Idp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def _html(self, body: str) -> None:
            data = f"<!doctype html><html><body>{body}</body></html>".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            request = read_request(self.path)
            idp.requests.append(request)
            self._html(
                "<h1>Test IdP sign-in</h1><form method='post' action='/sso/login'>"
                f"<input type='hidden' name='id' value='{html.escape(request.id)}'>"
                f"<input type='hidden' name='acs' value='{html.escape(request.assertion_consumer_service_url)}'>"
                f"<input type='hidden' name='sp' value='{html.escape(request.issuer.text)}'>"
                "<input name='login'><button type='submit'>Sign in</button></form>"
            )

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = {k: v[0] for k, v in urllib.parse.parse_qs(self.rfile.read(length).decode()).items()}
            response = idp.respond(form["login"], acs=form["acs"], audience=form["sp"], in_response_to=form["id"])
            self._html(
                f"<form id='post' method='post' action='{html.escape(form['acs'])}'>"
                f"<input type='hidden' name='SAMLResponse' value='{response}'></form>"
                "<script>document.getElementById('post').submit()</script>"
            )

    return Handler


@contextmanager
def saml_idp(folder: Path, users: dict[str, dict[str, Any]]) -> Iterator[Idp]:
    """The IdP serving on a free loopback port until the block ends."""
    key_file, cert = make_key(folder)
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    idp = Idp(entity_id=f"{url}/metadata", key_file=key_file, cert_b64=cert, users=users, url=url)
    server.RequestHandlerClass = _handler(idp)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield idp
    finally:
        server.shutdown()
        server.server_close()
