"""ID-token validation refuses forged, expired, future, wrong-issuer, wrong-audience, replayed (nonce),
unsigned and malformed tokens, each with its stable code; claims map to users and roles as configured."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from velyrix import errors
from velyrix.controlplane.db.models.identity import IdentityProvider
from velyrix.controlplane.identity import oidc

ISSUER = "https://idp.acme.example"
CLIENT = "velyrix"
NONCE = "n-0S6_WzA2Mj"
KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)
OTHER = RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)  # same kid, not the issuer's
PUBLISHED = KeySet.import_key_set({"keys": [KEY.as_dict(private=False)]})


def token(key: RSAKey = KEY, **changes: Any) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": CLIENT, "sub": "u1", "nonce": NONCE, "iat": now, "exp": now + 300}
    claims.update(changes)
    claims = {k: v for k, v in claims.items() if v is not None}
    return jwt.encode({"alg": "RS256", "kid": "k1"}, claims, key)


def check(value: str) -> dict[str, Any]:
    return oidc.validate_id_token(value, PUBLISHED, issuer=ISSUER, client_id=CLIENT, nonce=NONCE)


def _unsigned() -> str:
    def part(d: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"iss": ISSUER, "aud": CLIENT, "sub": "u1", "nonce": NONCE, "iat": now, "exp": now + 60}
    return f"{part({'alg': 'none'})}.{part(claims)}."


def test_a_good_token_passes() -> None:
    assert check(token())["sub"] == "u1"
    assert check(token(aud=[CLIENT, "other"], azp=CLIENT))["sub"] == "u1"


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda: token(OTHER), "identity_token_signature_invalid"),
        (lambda: token(exp=int(time.time()) - 120), "identity_token_expired"),
        (lambda: token(iat=int(time.time()) + 600), "identity_token_not_yet_valid"),
        (lambda: token(iss="https://evil.example"), "identity_token_wrong_issuer"),
        (lambda: token(aud="someone-else"), "identity_token_wrong_audience"),
        (lambda: token(aud=[CLIENT, "other"]), "identity_token_wrong_audience"),  # no azp
        (lambda: token(nonce="another-login"), "identity_token_nonce_mismatch"),
        (lambda: token(nonce=None), "identity_token_nonce_mismatch"),
        (lambda: token(sub=None), "identity_token_malformed"),
        (lambda: token(exp=None), "identity_token_malformed"),
        (_unsigned, "identity_token_malformed"),
        (lambda: "not.a.jwt", "identity_token_malformed"),
        (lambda: "x" * 20000, "identity_token_malformed"),
        (lambda: token()[:-10] + "AAAAAAAAAA", "identity_token_signature_invalid"),
    ],
)
def test_bad_tokens_are_refused_with_a_stable_code(make: Any, code: str) -> None:
    with pytest.raises(errors.IdentityError) as info:
        check(make())
    assert info.value.code == code and info.value.http_status == 401


def _idp(**kw: Any) -> IdentityProvider:
    from sqlalchemy import orm

    import velyrix.controlplane.api.app  # noqa: F401  (every table, so that the mappers configure)

    orm.configure_mappers()
    base = {"tenant_id": "ten_x", "name": "corp", "kind": "oidc", "issuer": ISSUER, "client_id": CLIENT}
    defaults = {"allowed_domains": ["acme.example"], "role_claim": "", "role_map": {}, "groups_claim": "groups"}
    return IdentityProvider(**(base | defaults | {"group_map": {}, "default_role": "viewer"} | kw))


def test_claims_map_to_user_and_role() -> None:
    idp = _idp(
        group_map={"gpu-admins": "admin", "founders": "owner"}, role_claim="velyrix_role", role_map={"ops": "member"}
    )
    who = oidc.identity(idp, {"sub": "u1", "email": "Alice@ACME.example", "groups": ["gpu-admins", "founders"]})
    assert who.user_name == "alice@acme.example" and who.role == "owner" and who.subject == f"{ISSUER}|u1"
    assert oidc.identity(idp, {"sub": "u2", "email": "b@acme.example", "velyrix_role": "ops"}).role == "member"
    assert oidc.identity(idp, {"sub": "u3", "email": "c@acme.example", "groups": ["nobody"]}).role == "viewer"
    for claims, code in (
        ({"sub": "u", "email": "e@evil.example"}, "identity_domain_not_allowed"),
        ({"sub": "u", "email": "e@acme.example", "email_verified": False}, "identity_email_unverified"),
        ({"sub": "u"}, "identity_email_missing"),
    ):
        with pytest.raises(errors.IdentityError) as info:
            oidc.identity(idp, claims)
        assert info.value.code == code
