"""The twin's storage tier: small objects of tenant volumes, encrypted for real with each volume's data key.

The tier keeps only ciphertext: an object is ``nonce (12 bytes) + AES-256-GCM ciphertext + tag (16 bytes)``,
bound (additional data) to its volume and name, so that moving it to another volume or name fails to
decrypt. Data keys come with each request (from the control plane, which unwrapped them under the tenant's
grant) and are never kept.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from velyrix import errors

NONCE_BYTES = 12
MAX_OBJECT_BYTES = 1 << 20
"""Largest object the twin stores (1 MiB): the twin proves the encryption, not the throughput."""


class ObjectNotFoundError(errors.NotFoundError):
    code = "object_not_found"


class ObjectUndecryptableError(errors.VelyrixError):
    """The object's ciphertext does not open with the data key given (another key, or altered media)."""

    code = "object_undecryptable"
    http_status = 409
    user_error = False


class SimStorage:
    """Ciphertext of every volume's objects, by volume id and object name."""

    def __init__(self) -> None:
        self._objects: dict[str, dict[str, bytes]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _aad(volume_id: str, name: str) -> bytes:
        return f"velyrix-object:{volume_id}/{name}".encode()

    def put(self, volume_id: str, name: str, data: bytes, data_key: bytes) -> dict[str, Any]:
        """Encrypt and store ``data``; returns ``{"bytes": plaintext size, "ciphertext_sha256": hex}``."""
        if len(data) > MAX_OBJECT_BYTES:
            raise errors.InvalidInputError(f"object of {len(data)} bytes; the twin stores up to {MAX_OBJECT_BYTES}")
        nonce = os.urandom(NONCE_BYTES)
        blob = nonce + AESGCM(data_key).encrypt(nonce, data, self._aad(volume_id, name))
        with self._lock:
            self._objects.setdefault(volume_id, {})[name] = blob
        return {"bytes": len(data), "ciphertext_sha256": hashlib.sha256(blob).hexdigest()}

    def get(self, volume_id: str, name: str, data_key: bytes) -> bytes:
        """Decrypt the object ``name`` of ``volume_id`` with ``data_key``."""
        blob = self.ciphertext(volume_id, name)
        try:
            return AESGCM(data_key).decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], self._aad(volume_id, name))
        except InvalidTag:
            raise ObjectUndecryptableError(
                f"object '{name}' of volume {volume_id} does not decrypt with its data key"
            ) from None

    def ciphertext(self, volume_id: str, name: str) -> bytes:
        """What the tier holds for the object (what a copy of the media would show)."""
        with self._lock:
            blob = self._objects.get(volume_id, {}).get(name)
        if blob is None:
            raise ObjectNotFoundError(kind="object", name=f"{volume_id}/{name}")
        return blob

    def names(self, volume_id: str) -> list[str]:
        with self._lock:
            return sorted(self._objects.get(volume_id, {}))

    def erase(self, volume_id: str) -> int:
        """Deallocate the volume's objects; returns how many there were."""
        with self._lock:
            return len(self._objects.pop(volume_id, {}))
