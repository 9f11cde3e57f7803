"""Ed25519 signatures on acceptance reports, so a tenant can verify who delivered what.

Each region has a key pair in ``$VELYRIX_HOME/keys/<region>.ed25519.pem`` (created on first use, mode 0600;
``VELYRIX_SIGNING_KEY_DIR`` overrides the directory so server replicas share one key), or in a PKCS#11 token
when ``VELYRIX_SIGNING_PKCS11_MODULE`` is set (``hsm_signing``: the private key never leaves the token).
A signed document is ``{"report": {...}, "signature": {"algorithm": "Ed25519", "key_id", "public_key",
"value"}}``; the signed bytes are the report as canonical JSON (sorted keys, no spaces, UTF-8).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from velyrix import errors, private_files, settings
from velyrix.controlplane.reconcile import hsm_signing


def canonical(document: dict[str, Any]) -> bytes:
    """The bytes that are signed: canonical JSON of ``document``."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def key_dir() -> Path:
    """The directory of the regions' signing keys (``velyrix.settings.SigningSettings``)."""
    current = settings.load()
    return Path(current.signing.key_dir) if current.signing.key_dir else current.paths.home / "keys"


def region_key(region: str) -> ed25519.Ed25519PrivateKey:
    """The signing key of ``region``, created on first use."""
    path = key_dir() / f"{region}.ed25519.pem"
    if path.exists():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(key, ed25519.Ed25519PrivateKey):
            raise errors.InvalidInputError(f"{path} is not an Ed25519 private key")
        return key
    private_files.private_dir(path.parent)
    key = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    # a temporary file of this writer's own (mode 0600), whole before it is linked: replicas sharing the
    # directory that create the key at once never write over each other's, and the first link wins
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    try:
        os.link(tmp, path)  # first writer wins when two replicas race
    except FileExistsError:
        tmp.unlink()
        return region_key(region)
    tmp.unlink()
    return key


def _raw_public(key: ed25519.Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_key_b64(region: str) -> str:
    """The region's public key (raw 32 bytes, base64) — what a tenant pins with ``--public-key``."""
    if hsm_signing.configured():
        return base64.b64encode(hsm_signing.public_raw(region)).decode()
    return base64.b64encode(_raw_public(region_key(region).public_key())).decode()


def key_id(public_raw: bytes) -> str:
    return "ed25519:" + hashlib.sha256(public_raw).hexdigest()[:16]


def sign(report: dict[str, Any], region: str) -> dict[str, Any]:
    """``report`` with its signature by ``region``'s key (in the PKCS#11 token when one is configured)."""
    if hsm_signing.configured():
        raw, value = hsm_signing.sign(region, canonical(report))
    else:
        key = region_key(region)
        raw, value = _raw_public(key.public_key()), key.sign(canonical(report))
    return {
        "report": report,
        "signature": {
            "algorithm": "Ed25519",
            "key_id": key_id(raw),
            "public_key": base64.b64encode(raw).decode(),
            "value": base64.b64encode(value).decode(),
        },
    }


@dataclass(frozen=True)
class Verification:
    valid: bool
    key_id: str
    reason: str


def verify(signed: dict[str, Any], public_key: str | None = None) -> Verification:
    """Check a signed document. ``public_key`` (base64 raw Ed25519) pins the signer; without it the key
    embedded in the document is used (integrity only: anyone can sign with their own key)."""
    try:
        sig = signed["signature"]
        report = signed["report"]
        embedded = base64.b64decode(sig["public_key"])
        value = base64.b64decode(sig["value"])
    except (KeyError, TypeError, ValueError) as exc:
        raise errors.InvalidInputError(
            f"not a signed Velyrix document: {exc}",
            hint="pass the JSON written by: velyrix report acceptance CLUSTER --json",
        ) from None
    if sig.get("algorithm") != "Ed25519":
        return Verification(False, "", f"unsupported algorithm {sig.get('algorithm')!r}")
    raw = base64.b64decode(public_key) if public_key else embedded
    if public_key and raw != embedded:
        return Verification(False, key_id(embedded), "signed by another key than the pinned one")
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(raw).verify(value, canonical(report))
    except (InvalidSignature, ValueError):
        return Verification(False, key_id(raw), "signature does not match the report (altered or forged)")
    return Verification(True, key_id(raw), "signature valid")
