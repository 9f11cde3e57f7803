"""Sealing of grant credentials: AES-256-GCM under the region's grant-sealing key, a 32-byte file
``cmk-grants.key`` (mode 0600) beside the region signing keys (``VELYRIX_SIGNING_KEY_DIR``, shared by server
replicas), never in the database. A copy of the database holds sealed credentials only; each is bound to its
grant's id (additional data), so one cannot be moved to another grant.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from velyrix import errors, private_files, settings

KEY_FILE = "cmk-grants.key"
NONCE_BYTES = 12


def key_path(file_name: str = KEY_FILE) -> Path:
    """The sealing key file ``file_name`` beside the region signing keys."""
    current = settings.load()
    base = Path(current.signing.key_dir) if current.signing.key_dir else current.paths.home / "keys"
    return base / file_name


def region_key(file_name: str = KEY_FILE) -> bytes:
    """The 32-byte AES-256-GCM key of the file ``file_name`` (mode 0600), created on first use; other
    sealed secrets of the region (``access/ca_sealing.py``) use this arrangement with their own file."""
    path = key_path(file_name)
    if not path.exists():
        private_files.private_dir(path.parent)
        tmp = path.with_name(f"{file_name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(AESGCM.generate_key(bit_length=256))
        try:
            os.link(tmp, path)  # first writer wins when two replicas race
        except FileExistsError:
            pass
        tmp.unlink()
    key = path.read_bytes()
    if len(key) != 32:
        raise errors.VelyrixError(f"{path} is not a 32-byte sealing key")
    return key


def _key() -> bytes:
    return region_key(KEY_FILE)


def seal(credential: dict[str, Any], grant_id: str) -> bytes:
    """``credential`` (JSON) sealed for the grant ``grant_id``: nonce + ciphertext + tag."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(_key()).encrypt(nonce, json.dumps(credential).encode(), grant_id.encode())


def unseal(sealed: bytes, grant_id: str) -> dict[str, Any]:
    """The credential ``seal`` made ``sealed`` of; an error if the sealing key or the grant differ."""
    try:
        plain = AESGCM(_key()).decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], grant_id.encode())
    except InvalidTag:
        raise errors.VelyrixError(
            f"the sealed credential of grant {grant_id} does not open with {key_path()} (another region's key?)"
        ) from None
    value: dict[str, Any] = json.loads(plain)
    return value
