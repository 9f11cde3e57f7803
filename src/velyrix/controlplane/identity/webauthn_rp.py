"""The control plane as a WebAuthn relying party, through py_webauthn: creation and request options, and
the checks of a registration or an assertion (challenge, origin, RP ID hash, user presence and
verification, signature, sign counter). Every refusal is an ``IdentityError`` with a stable code:

- ``identity_mfa_origin_mismatch``: the client data's origin is not one the control plane serves on;
- ``identity_mfa_rp_id_mismatch``: the authenticator signed for another RP ID;
- ``identity_mfa_counter_regressed``: the sign counter did not move forward (a cloned authenticator);
- ``identity_mfa_user_verification_required``: no PIN or biometric where the role demands one;
- ``identity_mfa_assertion_invalid``: anything else (bad signature, malformed data).

Inputs are the browser's ``PublicKeyCredential`` as JSON (base64url fields); outputs are plain data.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

import webauthn
from webauthn.helpers import exceptions as wa_errors
from webauthn.helpers import structs

from velyrix import errors, settings

RP_NAME = "Velyrix"
TIMEOUT_MS = 120_000
MAX_CREDENTIAL_JSON = 64 * 1024
"""Bytes of a credential's JSON accepted at most (a real one is a few kB)."""

_REASONS = (
    ("origin", "mfa_origin_mismatch"),
    ("RP ID", "mfa_rp_id_mismatch"),
    ("sign count", "mfa_counter_regressed"),
    ("User verification", "mfa_user_verification_required"),
)


@dataclass(frozen=True)
class RelyingParty:
    """Where credentials are bound: ``rp_id`` (a domain) and the origins assertions may come from (an
    empty tuple: any http(s)://localhost port, only when ``rp_id`` is ``localhost``)."""

    rp_id: str
    origins: tuple[str, ...]

    def expected_origin(self, presented: str) -> str | list[str]:
        """The origins to check ``presented`` against."""
        if self.origins:
            return list(self.origins)
        if self.rp_id == "localhost" and urllib.parse.urlsplit(presented).hostname == "localhost":
            return presented if presented.startswith(("http://", "https://")) else "https://localhost"
        return f"https://{self.rp_id}"


def relying_party() -> RelyingParty:
    """The relying party of the running control plane (``VELYRIX_WEBAUTHN_RP_ID`` and ``_ORIGINS``)."""
    found = settings.load().identity
    origins = tuple(o.strip().rstrip("/") for o in found.webauthn_origins.split(",") if o.strip())
    return RelyingParty(rp_id=found.webauthn_rp_id, origins=origins)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _uv(required: bool) -> structs.UserVerificationRequirement:
    return structs.UserVerificationRequirement.REQUIRED if required else structs.UserVerificationRequirement.PREFERRED


def registration_options(
    rp: RelyingParty, *, user_id: str, user_name: str, display_name: str, exclude: list[str], uv_required: bool
) -> tuple[dict[str, Any], bytes]:
    """``(options for navigator.credentials.create, challenge)``; ``exclude``: credential ids (base64url)
    the user has already registered."""
    options = webauthn.generate_registration_options(
        rp_id=rp.rp_id,
        rp_name=RP_NAME,
        user_id=user_id.encode(),
        user_name=user_name,
        user_display_name=display_name or user_name,
        timeout=TIMEOUT_MS,
        authenticator_selection=structs.AuthenticatorSelectionCriteria(user_verification=_uv(uv_required)),
        exclude_credentials=[structs.PublicKeyCredentialDescriptor(id=unb64(c)) for c in exclude],
    )
    return dict(json.loads(webauthn.options_to_json(options))), options.challenge


def authentication_options(rp: RelyingParty, *, allow: list[str], uv_required: bool) -> tuple[dict[str, Any], bytes]:
    """``(options for navigator.credentials.get, challenge)`` limited to the credentials in ``allow``."""
    options = webauthn.generate_authentication_options(
        rp_id=rp.rp_id,
        timeout=TIMEOUT_MS,
        allow_credentials=[structs.PublicKeyCredentialDescriptor(id=unb64(c)) for c in allow],
        user_verification=_uv(uv_required),
    )
    return dict(json.loads(webauthn.options_to_json(options))), options.challenge


def client_challenge(credential: dict[str, Any]) -> tuple[bytes, str]:
    """``(challenge, origin)`` the browser signed into the credential's client data; 400
    ``identity_mfa_assertion_invalid`` when it is missing or malformed."""
    try:
        raw = credential["response"]["clientDataJSON"]
        data = json.loads(unb64(raw))
        return unb64(data["challenge"]), str(data.get("origin", ""))
    except (KeyError, TypeError, ValueError) as exc:
        raise _refusal("the credential's client data is missing or malformed", "mfa_assertion_invalid") from exc


def _refusal(message: str, reason: str) -> errors.IdentityError:
    return errors.IdentityError(message, reason=reason, status=400, hint="ask the security key again")


def _translate(exc: Exception) -> errors.IdentityError:
    text = str(exc)
    reason = next((r for needle, r in _REASONS if needle in text), "mfa_assertion_invalid")
    return _refusal(f"the security key's answer was refused: {text[:200]}", reason)


@dataclass(frozen=True)
class Registered:
    credential_id: str
    public_key: str
    sign_count: int


def verify_registration(
    rp: RelyingParty, credential: dict[str, Any], challenge: bytes, origin: str, *, uv_required: bool
) -> Registered:
    """The new credential (ids and COSE public key base64url) after every check of the attestation."""
    try:
        found = webauthn.verify_registration_response(
            credential=credential,
            expected_challenge=challenge,
            expected_rp_id=rp.rp_id,
            expected_origin=rp.expected_origin(origin),
            require_user_verification=uv_required,
        )
    except (wa_errors.InvalidRegistrationResponse, wa_errors.InvalidJSONStructure, ValueError, KeyError) as exc:
        raise _translate(exc) from exc
    return Registered(b64(found.credential_id), b64(found.credential_public_key), found.sign_count)


def verify_assertion(
    rp: RelyingParty,
    credential: dict[str, Any],
    challenge: bytes,
    origin: str,
    *,
    public_key: str,
    sign_count: int,
    uv_required: bool,
) -> int:
    """The authenticator's new sign count after every check of the assertion."""
    try:
        found = webauthn.verify_authentication_response(
            credential=credential,
            expected_challenge=challenge,
            expected_rp_id=rp.rp_id,
            expected_origin=rp.expected_origin(origin),
            credential_public_key=unb64(public_key),
            credential_current_sign_count=sign_count,
            require_user_verification=uv_required,
        )
    except (wa_errors.InvalidAuthenticationResponse, wa_errors.InvalidJSONStructure, ValueError, KeyError) as exc:
        raise _translate(exc) from exc
    return int(found.new_sign_count)


def credential_id_of(credential: dict[str, Any]) -> str:
    """The credential's id, normalised to unpadded base64url."""
    raw = credential.get("rawId") or credential.get("id")
    if not isinstance(raw, str) or len(raw) > 1400:
        raise _refusal("the credential lacks its id", "mfa_assertion_invalid")
    try:
        return b64(unb64(raw))
    except ValueError as exc:
        raise _refusal("the credential's id is not base64url", "mfa_assertion_invalid") from exc
