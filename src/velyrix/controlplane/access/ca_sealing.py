"""Sealing of the SSH CAs' private keys (``models.access.SshAuthority.sealed_private_key``).

AES-256-GCM under the region's SSH-CA key, a 32-byte file ``ssh-ca.key`` (mode 0600) beside the region
signing keys (``VELYRIX_SIGNING_KEY_DIR``, shared by server replicas), never in the database: the
arrangement of ``controlplane/cmk/sealing.py``, whose key handling this reuses. Each sealed key is bound
to its tenant (additional data), so a copy of the database holds no usable CA and one tenant's sealed
key cannot be moved onto another tenant's row. Nothing here logs; no API returns these keys.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from velyrix import errors
from velyrix.controlplane.cmk import sealing

KEY_FILE = "ssh-ca.key"
NONCE_BYTES = 12


def _bound_to(tenant_id: str | None) -> bytes:
    """The additional data of a tenant's CA key (``None``: the provider operators' CA)."""
    return f"ssh-ca:{tenant_id or 'provider'}".encode()


def seal(private_key_pem: bytes, tenant_id: str | None) -> bytes:
    """``private_key_pem`` (OpenSSH PEM) sealed for ``tenant_id``'s CA: nonce + ciphertext + tag."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(sealing.region_key(KEY_FILE)).encrypt(nonce, private_key_pem, _bound_to(tenant_id))


def unseal(sealed: bytes, tenant_id: str | None) -> bytes:
    """The PEM ``seal`` made ``sealed`` of; ``VelyrixError`` if the key file or the tenant differ."""
    try:
        return AESGCM(sealing.region_key(KEY_FILE)).decrypt(
            sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], _bound_to(tenant_id)
        )
    except InvalidTag:
        raise errors.VelyrixError(
            f"the sealed SSH CA key of {tenant_id or 'the provider'} does not open with "
            f"{sealing.key_path(KEY_FILE)} (another region's key?)"
        ) from None
