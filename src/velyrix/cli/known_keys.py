"""The regions' acceptance-signing keys this CLI trusts, pinned per control plane like SSH's known_hosts.

``$VELYRIX_HOME/known_keys.json`` (mode 0600) maps ``endpoint`` -> ``region`` -> the base64 raw Ed25519 public
key the control plane published at ``GET /v1/acceptance/keys/REGION`` when it was first seen (``velyrix login``
pins every region's key; ``verify acceptance`` pins a region met later). A control plane that later
publishes another key for a pinned region is refused loudly (``KeyChangedError``), never re-pinned silently.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

from velyrix import errors, private_files, settings

KNOWN_KEYS_FILE = "known_keys.json"


class KeyChangedError(errors.ConflictError):
    """The control plane publishes another signing key for a region than the one pinned for it."""

    code = "signing_key_changed"


def path() -> Path:
    return settings.load().paths.home / KNOWN_KEYS_FILE


def load() -> dict[str, dict[str, str]]:
    """``{endpoint: {region: public key}}``; empty when nothing is pinned. A damaged file is an error."""
    file = path()
    if not file.exists():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        data = None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise errors.InvalidInputError(
            f"the pinned keys file {file} is unreadable or damaged", hint=f"move it away and log in again: {file}"
        )
    return {str(e): {str(r): str(k) for r, k in regions.items()} for e, regions in data.items()}


def key_id(public_key: str) -> str:
    """``ed25519:`` and the first 16 hex digits of SHA-256 of the raw key (as the signatures name keys)."""
    return "ed25519:" + hashlib.sha256(base64.b64decode(public_key)).hexdigest()[:16]


def pin(endpoint: str, region: str, public_key: str) -> bool:
    """Pin ``public_key`` for ``region`` at ``endpoint``; True when it was new. Raises ``KeyChangedError``
    (nothing written) when another key is pinned there."""
    known = load()
    pinned = known.get(endpoint, {}).get(region)
    if pinned == public_key:
        return False
    if pinned is not None:
        raise KeyChangedError(
            f"THE ACCEPTANCE SIGNING KEY OF REGION {region} AT {endpoint} HAS CHANGED: pinned {key_id(pinned)}, "
            f"the control plane now publishes {key_id(public_key)}. Reports signed by the new key are not "
            "trusted; someone may be impersonating the control plane, or its key was rotated",
            hint=f"confirm the new key with the provider out of band, then remove {region} under {endpoint} "
            f"from {path()} and log in again",
        )
    known.setdefault(endpoint, {})[region] = public_key
    private_files.private_dir(path().parent, tighten=True)
    private_files.write_private(path(), json.dumps(known, sort_keys=True, indent=1).encode())
    return True


def fetch_and_pin(client: Any, region: str) -> tuple[str, bool]:
    """The key ``client``'s control plane publishes for ``region``, pinned (trust on first use); and whether
    it was new. Raises ``KeyChangedError`` when it differs from the pinned one."""
    published = str(client.get(f"/v1/acceptance/keys/{region}")["public_key"])
    return published, pin(client.endpoint, region, published)


def pin_all(client: Any) -> list[tuple[str, str, bool]]:
    """Pin the key of every region the control plane serves: ``[(region, key id, new)]``."""
    out = []
    for region in client.get("/v1/regions").get("items", []):
        name = str(region["name"])
        key, new = fetch_and_pin(client, name)
        out.append((name, key_id(key), new))
    return out


def trusted_key(region: str) -> tuple[str | None, str]:
    """The key to check a report of ``region`` against, and where it came from: the one pinned for the
    logged-in control plane (fetched and pinned now when none is), else the only one pinned for ``region``
    at any control plane; ``(None, why)`` when there is none."""
    from velyrix.cli import client as client_mod

    try:
        client = client_mod.Client.from_login()
    except errors.NotLoggedInError:
        client = None
    if client is not None:
        pinned = load().get(client.endpoint, {}).get(region)
        if pinned:
            return pinned, f"pinned for {region} at {client.endpoint}"
        key, _ = fetch_and_pin(client, region)
        return key, f"published by {client.endpoint} for {region}, pinned now"
    found = {k for regions in load().values() for r, k in regions.items() if r == region}
    if len(found) == 1:
        return found.pop(), f"pinned for {region}"
    why = "several control planes pinned different keys for it" if found else "no key is pinned for it"
    return None, f"{why}; log in to its control plane (velyrix login pins its keys) or pass --public-key"
