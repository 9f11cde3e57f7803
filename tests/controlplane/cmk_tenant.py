"""What a tenant does in its own HSM and key manager, outside Velyrix: create an AES-256 key, destroy it.
Also what a provider's operator could try with a copy of the database (``candidate_keys``)."""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Iterator
from typing import Any

import pkcs11
import sqlalchemy as sa
from kmip.core import enums
from kmip.pie.client import ProxyKmipClient

from velyrix.controlplane.cmk import pkcs11_backend
from velyrix.testing import hsm


def pkcs11_create(label: str) -> None:
    """An AES-256 key in the tenant's token: private, sensitive, never extractable."""
    module = hsm.shared_softhsm().module
    with pkcs11_backend.open_session(module, hsm.TENANT_TOKEN, hsm.TENANT_PIN, rw=True) as s:
        s.generate_key(
            pkcs11.KeyType.AES,
            256,
            label=label,
            store=True,
            template={pkcs11.Attribute.EXTRACTABLE: False, pkcs11.Attribute.SENSITIVE: True},
        )


def pkcs11_destroy(label: str) -> None:
    module = hsm.shared_softhsm().module
    with pkcs11_backend.open_session(module, hsm.TENANT_TOKEN, hsm.TENANT_PIN, rw=True) as s:
        s.get_key(label=label, key_type=pkcs11.KeyType.AES).destroy()


def kmip_client(server: hsm.KmipServer, who: hsm.Identity, folder: Any) -> ProxyKmipClient:
    (folder / "c.pem").write_text(who.cert_pem)
    (folder / "c.key").write_text(who.key_pem)
    (folder / "ca.pem").write_text(server.ca.pem)
    client = ProxyKmipClient(
        hostname=server.host,
        port=server.port,
        cert=str(folder / "c.pem"),
        key=str(folder / "c.key"),
        ca=str(folder / "ca.pem"),
        config_file="/dev/null",
        kmip_version=enums.KMIPVersion.KMIP_1_4,
    )
    client.open()
    return client


def kmip_create(client: ProxyKmipClient, name: str) -> str:
    """An active AES-256 key for encrypt and decrypt; its unique identifier."""
    masks = [enums.CryptographicUsageMask.ENCRYPT, enums.CryptographicUsageMask.DECRYPT]
    uid = client.create(enums.CryptographicAlgorithm.AES, 256, name=name, cryptographic_usage_mask=masks)
    client.activate(uid)
    return str(uid)


def kmip_destroy(client: ProxyKmipClient, uid: str) -> None:
    client.revoke(enums.RevocationReasonCode.KEY_COMPROMISE, uid)
    client.destroy(uid)


def database_values(url: str) -> Iterator[Any]:
    """Every value of every row of every table: what a copy of the database holds."""
    engine = sa.create_engine(url)
    try:
        meta = sa.MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            for table in meta.sorted_tables:
                for row in conn.execute(sa.select(table)):
                    yield from row
    finally:
        engine.dispose()


def _decodings(text: str) -> Iterator[bytes]:
    yield text.encode()
    for decode in (base64.b64decode, base64.urlsafe_b64decode, bytes.fromhex):
        try:
            yield decode(text)  # type: ignore[operator]
        except (binascii.Error, ValueError):
            pass


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    else:
        yield str(value)


def candidate_keys(url: str, limit_bytes: int = 4096) -> set[bytes]:
    """Every 32-byte window of every value in the database (raw, and its base64 and hex decodings)."""
    out: set[bytes] = set()
    for value in database_values(url):
        blobs: list[bytes] = []
        if isinstance(value, bytes | bytearray | memoryview):
            blobs.append(bytes(value))
        elif isinstance(value, str):
            blobs.extend(_decodings(value))
        elif isinstance(value, dict | list):
            for text in _strings(value):
                blobs.extend(_decodings(text))
        for blob in blobs:
            blob = blob[:limit_bytes]
            out.update(blob[i : i + 32] for i in range(max(0, len(blob) - 31)))
    return out


def customer_key(world: Any, owner: Any) -> str:
    """A customer key of ``owner`` (a TenantWorld) straight in the database, on a key manager the suite's app
    does not allow, without a grant: the routes answer it without reaching any key manager."""
    from velyrix.controlplane.db.models.keys import CustomerKey

    with world.session() as s:
        locator = {"host": "127.0.0.1", "port": 9, "key_id": "1", "ca_pem": "-"}
        cmk = CustomerKey(
            tenant_id=owner.tenant_id, name=f"cmk-{uuid.uuid4().hex[:8]}", provider="kmip", locator=locator
        )
        s.add(cmk)
        s.commit()
        return str(cmk.id)
