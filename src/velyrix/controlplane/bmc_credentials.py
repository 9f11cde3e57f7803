"""BMC credentials of the Redfish driver, stored only sealed (``models.bmc.BmcCredential``).

The password is sealed with AES-256-GCM under the region's BMC-credential key, a 32-byte file
``bmc-credentials.key`` (mode 0600) beside the signing keys (``VELYRIX_SIGNING_KEY_DIR``, shared by server
replicas; the same arrangement as ``controlplane/cmk/sealing.py``), with the node's name as additional
data. ``endpoints(sessionmaker)`` is the driver's ``EndpointSource``: it opens the row per request, so the
plaintext lives only for that call, inside a ``Secret`` that never prints.
"""

from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.cmk import sealing
from velyrix.controlplane.db.models.bmc import BmcCredential
from velyrix.fleet.drivers.redfish import BmcEndpoint, Secret
from velyrix.fleet.drivers.redfish.driver import EndpointSource

KEY_FILE = "bmc-credentials.key"
NONCE_BYTES = 12
MAX_PASSWORD_CHARS = 256


def key_path() -> Path:
    """The region's BMC-credential key file (``cmk.sealing``'s arrangement, with its own file)."""
    return sealing.key_path(KEY_FILE)


def _key() -> bytes:
    return sealing.region_key(KEY_FILE)


def seal(password: str, node: str) -> bytes:
    """``password`` sealed for ``node``: nonce + ciphertext + tag."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(_key()).encrypt(nonce, password.encode(), node.encode())


def unseal(sealed: bytes, node: str) -> Secret:
    try:
        plain = AESGCM(_key()).decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], node.encode())
    except InvalidTag:
        raise errors.VelyrixError(
            f"the sealed BMC password of {node} does not open with {key_path()} (another region's key?)",
            hint="store the node's BMC credentials again (velyrix admin bmc-credentials)",
        ) from None
    return Secret(plain.decode())


def store(
    session: orm.Session,
    node: str,
    *,
    region: str,
    address: str,
    system_id: str,
    username: str,
    password: Secret,
    verify_tls: bool = True,
    node_type: str = "",
) -> BmcCredential:
    """Create or replace ``node``'s BMC endpoint; the password is sealed before it reaches the row."""
    if not username or not password.reveal():
        raise errors.InvalidInputError(f"the BMC of {node} needs a user name and a password")
    if len(password.reveal()) > MAX_PASSWORD_CHARS:
        raise errors.InvalidInputError(f"a BMC password is at most {MAX_PASSWORD_CHARS} characters")
    if not address.startswith(("https://", "http://")):
        raise errors.InvalidInputError(
            f"the BMC address must be an http(s) URL, got {address!r}", hint="https://10.0.7.21"
        )
    row = session.scalar(sa.select(BmcCredential).where(BmcCredential.node_name == node))
    if row is None:
        row = BmcCredential(node_name=node)
        session.add(row)
    row.region, row.address, row.system_id, row.username = region, address.rstrip("/"), system_id, username
    row.sealed_password, row.verify_tls, row.node_type = seal(password.reveal(), node), verify_tls, node_type
    session.flush()
    return row


def endpoints(sessionmaker: orm.sessionmaker[orm.Session]) -> EndpointSource:
    """The Redfish driver's endpoint source: ``node`` -> its ``BmcEndpoint`` (password unsealed per call);
    a node without a stored endpoint raises ``NotFoundError``."""

    def endpoint(node: str) -> BmcEndpoint:
        with sessionmaker() as s:
            row = s.scalar(sa.select(BmcCredential).where(BmcCredential.node_name == node))
            if row is None:
                raise errors.NotFoundError(kind="BMC endpoint of node", name=node)
            return BmcEndpoint(
                address=row.address,
                system_id=row.system_id,
                username=row.username,
                password=unseal(row.sealed_password, node),
                verify_tls=row.verify_tls,
                node_type=row.node_type,
            )

    return endpoint
