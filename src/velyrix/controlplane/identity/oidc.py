"""OpenID Connect relying party: discovery, the authorization-code flow with PKCE (S256), and ID-token
validation with joserfc (signature against the issuer's JWKS, ``iss``, ``aud``, ``azp``, ``exp``,
``iat``, ``nonce``; 60 s of clock skew at most), then claims to a tenant user and role.

Inputs from the identity provider are evidence: every refusal is an ``IdentityError`` with a stable
code (``identity_token_*``, ``identity_domain_not_allowed``...), answered 401 with nothing changed.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import httpx
from joserfc import errors as jose_errors
from joserfc import jwt
from joserfc.jwk import KeySet

from velyrix import errors
from velyrix.controlplane.auth import roles
from velyrix.controlplane.db.models.identity import IdentityProvider

LEEWAY_S = 60
"""Clock skew tolerated on ``exp``/``iat``/``nbf`` (seconds)."""
CACHE_S = 300.0
ALGORITHMS = ["RS256", "ES256", "PS256", "EdDSA"]
MAX_ID_TOKEN_BYTES = 16 * 1024
_cache: dict[str, tuple[float, Any]] = {}
_lock = threading.Lock()


def _refused(message: str, reason: str, hint: str | None = None) -> errors.IdentityError:
    return errors.IdentityError(message, reason=reason, hint=hint)


def pkce_pair() -> tuple[str, str]:
    """``(code_verifier, S256 code_challenge)`` of RFC 7636."""
    verifier = secrets.token_urlsafe(48)
    return verifier, s256(verifier)


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _get_json(url: str) -> Any:
    try:
        resp = httpx.get(url, timeout=10.0)
        resp.raise_for_status()
        return resp.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise errors.IdentityError(
            f"identity provider unreachable or answered badly at {url}: {exc}",
            reason="provider_unavailable",
            status=502,
        ) from exc


def _cached(url: str, refresh: bool = False) -> Any:
    now = time.monotonic()
    with _lock:
        hit = _cache.get(url)
    if hit is not None and not refresh and now - hit[0] < CACHE_S:
        return hit[1]
    value = _get_json(url)
    with _lock:
        _cache[url] = (now, value)
    return value


def discover(issuer: str) -> dict[str, Any]:
    """The provider's metadata (``/.well-known/openid-configuration``), cached five minutes; its
    ``issuer`` must be exactly the configured one (OpenID Connect Discovery 1.0, section 4.3)."""
    meta = _cached(issuer.rstrip("/") + "/.well-known/openid-configuration")
    if not isinstance(meta, dict) or meta.get("issuer") != issuer:
        raise _refused(f"discovery of {issuer} names another issuer", "issuer_mismatch")
    return meta


@dataclass(frozen=True)
class Start:
    """Where to send the browser, and what the flow must remember (state, nonce, PKCE verifier)."""

    url: str
    state: str
    nonce: str
    verifier: str


def start(provider: IdentityProvider, redirect_uri: str) -> Start:
    """The authorization request (code flow, PKCE S256, ``openid email profile groups``)."""
    meta = discover(provider.issuer)
    state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    verifier, challenge = pkce_pair()
    query = {
        "response_type": "code",
        "client_id": provider.client_id,
        "redirect_uri": redirect_uri,
        "scope": "openid email profile groups",
        "state": state,
        "nonce": nonce,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "prompt": "consent",
    }
    return Start(str(meta["authorization_endpoint"]) + "?" + urllib.parse.urlencode(query), state, nonce, verifier)


def exchange(provider: IdentityProvider, code: str, redirect_uri: str, verifier: str) -> str:
    """The ID token the provider's token endpoint returns for ``code`` (client_secret_basic + PKCE)."""
    meta = discover(provider.issuer)
    try:
        resp = httpx.post(
            str(meta["token_endpoint"]),
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
            },
            auth=(provider.client_id, provider.client_secret) if provider.client_secret else None,
            timeout=10.0,
        )
    except httpx.HTTPError as exc:
        raise errors.IdentityError(
            f"token endpoint unreachable: {exc}", reason="provider_unavailable", status=502
        ) from exc
    if resp.status_code != 200:
        raise _refused(f"the provider refused the authorization code ({resp.status_code})", "code_refused")
    token = resp.json().get("id_token") if resp.headers.get("content-type", "").startswith("application/json") else None
    if not isinstance(token, str):
        raise _refused("the token endpoint returned no ID token", "token_missing")
    return token


def keys(issuer: str, refresh: bool = False) -> KeySet:
    """The issuer's signing keys (its ``jwks_uri``), cached; ``refresh`` refetches (a rotated key)."""
    return KeySet.import_key_set(_cached(str(discover(issuer)["jwks_uri"]), refresh=refresh))


def validate_id_token(
    token: str, key_set: KeySet, *, issuer: str, client_id: str, nonce: str, now: int | None = None
) -> dict[str, Any]:
    """The claims of a valid ID token; ``IdentityError`` naming what is wrong otherwise: ``token_malformed``,
    ``token_signature_invalid`` (forged, or signed by a key the issuer does not publish),
    ``token_expired``, ``token_wrong_issuer``, ``token_wrong_audience``, ``token_nonce_mismatch``."""
    if len(token) > MAX_ID_TOKEN_BYTES:
        raise _refused("ID token larger than 16 KiB", "token_malformed")
    try:
        decoded = jwt.decode(token, key_set, algorithms=ALGORITHMS)
    except jose_errors.BadSignatureError as exc:
        raise _refused("ID token signature does not verify with the issuer's keys", "token_signature_invalid") from exc
    except (jose_errors.JoseError, ValueError) as exc:
        text = str(exc)
        reason = "token_signature_invalid" if "key" in text.lower() else "token_malformed"
        raise _refused(f"ID token unreadable: {text}", reason) from exc
    claims = dict(decoded.claims)
    _check_claims(claims, issuer=issuer, client_id=client_id, nonce=nonce, now=int(time.time()) if now is None else now)
    return claims


def _check_claims(claims: dict[str, Any], *, issuer: str, client_id: str, nonce: str, now: int) -> None:
    if claims.get("iss") != issuer:
        raise _refused(f"ID token issued by {claims.get('iss')!r}, not {issuer!r}", "token_wrong_issuer")
    aud = claims.get("aud")
    audiences = aud if isinstance(aud, list) else [aud]
    if client_id not in audiences or (len(audiences) > 1 and claims.get("azp") != client_id):
        raise _refused(f"ID token is for {aud!r}, not this client", "token_wrong_audience")
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, int) or not isinstance(iat, int):
        raise _refused("ID token lacks exp or iat", "token_malformed")
    if exp + LEEWAY_S <= now:
        raise _refused("ID token expired", "token_expired", hint="log in again")
    if iat - LEEWAY_S > now:
        raise _refused("ID token issued in the future (clock skew over 60 s)", "token_not_yet_valid")
    if not isinstance(claims.get("nonce"), str) or not secrets.compare_digest(claims["nonce"], nonce):
        raise _refused("ID token nonce does not match this login (replayed?)", "token_nonce_mismatch")
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise _refused("ID token lacks a subject", "token_malformed")


@dataclass(frozen=True)
class Identity:
    """Who the provider says logged in, and the tenant role that follows."""

    subject: str
    user_name: str
    display_name: str
    groups: list[str]
    role: str


_RANK = {role: i for i, role in enumerate(roles.TENANT_ROLES)}  # owner first: most powerful
_PROVIDER_RANK = {role: i for i, role in enumerate([*roles.PROVIDER_ROLES, *roles.TENANT_ROLES])}
"""The provider tenant's ranking: a provider role (operator, auditor) outranks every tenant role."""


def role_for(provider: IdentityProvider, role_claim: Any, groups: list[str], *, provider_roles: bool = False) -> str:
    """The most powerful role that the role claim (``role_map``) or a group (``group_map``) grants,
    else ``default_role``. Only for the provider's own tenant (``provider_roles``,
    ``provider_staff.is_provider_tenant``) may a map yield a provider role (``roles.PROVIDER_ROLES``); any
    other name outside the tenant roles is ignored (configuration refuses such maps,
    ``identity_providers.create``)."""
    rank = _PROVIDER_RANK if provider_roles else _RANK
    found = []
    for value in role_claim if isinstance(role_claim, list) else [role_claim]:
        if isinstance(value, str) and value in provider.role_map:
            found.append(provider.role_map[value])
    found += [provider.group_map[g] for g in groups if g in provider.group_map]
    valid = [r for r in found if r in rank]
    return min(valid, key=rank.__getitem__) if valid else provider.default_role


def identity(provider: IdentityProvider, claims: dict[str, Any], *, provider_roles: bool = False) -> Identity:
    """The user of ``claims``: a verified e-mail address of an allowed domain (``domain_not_allowed``,
    ``email_unverified`` otherwise), groups from ``groups_claim``, role from ``role_for`` (provider roles
    only when ``provider_roles``: the provider's own tenant)."""
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email:
        raise _refused("the identity provider sent no e-mail address", "email_missing")
    if claims.get("email_verified") is False:
        raise _refused(f"{email} is not verified at the identity provider", "email_unverified")
    domain = email.rsplit("@", 1)[1].lower()
    if provider.allowed_domains and domain not in {d.lower() for d in provider.allowed_domains}:
        raise _refused(
            f"users of {domain} may not log in to this tenant",
            "domain_not_allowed",
            hint="allowed: " + ", ".join(provider.allowed_domains),
        )
    raw_groups = claims.get(provider.groups_claim or "groups") or []
    groups = [g for g in raw_groups if isinstance(g, str)][:200] if isinstance(raw_groups, list) else []
    return Identity(
        subject=f"{provider.issuer}|{claims['sub']}",
        user_name=email.lower(),
        display_name=str(claims.get("name") or email)[:200],
        groups=groups,
        role=role_for(
            provider,
            claims.get(provider.role_claim) if provider.role_claim else None,
            groups,
            provider_roles=provider_roles,
        ),
    )
