"""Offline verification of documents signed by a region's key (acceptance reports, sanitization certificates):
read the file strictly, choose the key to trust, check the signature.

The key is ``--public-key`` when given (base64 raw Ed25519, checked), else the region's key pinned at login
(``velyrix.cli.known_keys.trusted_key``, like SSH's known_hosts). A document signed by any other key is
INVALID, and so is one whose signer cannot be told (no key pinned, no ``--public-key``): the key embedded in
a document proves only that someone signed it.
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Any

from velyrix import errors


class DuplicateKeyError(ValueError):
    """The document holds one key twice in one object: which value was signed is ambiguous."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(f"the document holds the key {json.dumps(key)} twice in one object")
        out[key] = value
    return out


def read(file: Path, hint: str) -> Any:
    """The JSON of ``file``; ``DuplicateKeyError`` for a key repeated in an object (the caller answers
    INVALID), ``InvalidInputError`` with ``hint`` when it cannot be read or parsed (exit 2)."""
    try:
        return json.loads(file.read_text(), object_pairs_hook=_pairs)
    except DuplicateKeyError:
        raise
    except (OSError, ValueError) as exc:
        raise errors.InvalidInputError(f"cannot read {file}: {exc}", hint=hint) from None


def check_public_key(public_key: str | None) -> None:
    """``--public-key``: base64 of a raw 32-byte Ed25519 key, else a clear input error (exit 2)."""
    if public_key is None:
        return
    try:
        raw = base64.b64decode(public_key, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise errors.InvalidInputError(
            f"--public-key {public_key!r} is not a base64 Ed25519 public key (32 bytes)",
            hint="copy public_key from GET /v1/acceptance/keys/REGION",
        )


def trusted(region: Any, public_key: str | None, where: str) -> tuple[str | None, str]:
    """``(key, where it came from)``: ``public_key`` when given, else the pinned key of ``region`` (the region
    the document names, at ``where``, e.g. ``report.region``); ``(None, why)`` when no key can be trusted."""
    if public_key:
        check_public_key(public_key)
        return public_key, "given with --public-key"
    if not isinstance(region, str) or not region:
        return None, f"the document names no region ({where})"
    from velyrix.cli import known_keys

    return known_keys.trusted_key(region)
