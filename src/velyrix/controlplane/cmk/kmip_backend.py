"""A tenant's key-encryption key in a KMIP key manager (PyKMIP client, KMIP 1.4 over mutual TLS).

The key is a symmetric AES-256 managed object named by its unique identifier; it never leaves the key
manager. Wrapping is the KMIP Encrypt operation with AES-GCM (12-byte random nonce, 128-bit tag, the
volume's binding as authenticated additional data); a wrapped key is ``nonce + ciphertext + tag``. The
client authenticates with the certificate the tenant issued to Velyrix (the grant); the key manager's
certificate must chain to the CA the tenant registered.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kmip.core import enums
from kmip.core.attributes import CryptographicParameters
from kmip.core.messages import messages, payloads
from kmip.core.messages.contents import Operation
from kmip.pie import exceptions as kmip_errors
from kmip.pie.client import ProxyKmipClient

from velyrix.controlplane.cmk import errors

NONCE_BYTES = 12
TAG_BYTES = 16
TIMEOUT_S = 10
_GCM = CryptographicParameters(
    block_cipher_mode=enums.BlockCipherMode.GCM,
    cryptographic_algorithm=enums.CryptographicAlgorithm.AES,
    tag_length=TAG_BYTES,
)
_GONE = {enums.ResultReason.ITEM_NOT_FOUND, enums.ResultReason.PERMISSION_DENIED}


class KmipKey:
    """One AES-256 managed object (``key_id``) on the key manager at ``host:port``."""

    def __init__(self, host: str, port: int, key_id: str, ca_pem: str, client_cert_pem: str, client_key_pem: str):
        self.host, self.port, self.key_id = host, port, key_id
        self._pems = {"ca.pem": ca_pem, "client.pem": client_cert_pem, "client.key": client_key_pem}

    @contextmanager
    def _client(self) -> Iterator[Any]:
        with tempfile.TemporaryDirectory(prefix="velyrix-kmip-") as tmp:  # mode 0700: the grant's key
            for name, text in self._pems.items():
                fd = os.open(Path(tmp) / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as fh:
                    fh.write(text)
            client = ProxyKmipClient(
                hostname=self.host,
                port=self.port,
                cert=f"{tmp}/client.pem",
                key=f"{tmp}/client.key",
                ca=f"{tmp}/ca.pem",
                config_file=os.devnull,
                kmip_version=enums.KMIPVersion.KMIP_1_4,
            )
            client.proxy.timeout = TIMEOUT_S
            try:
                client.open()
            except (OSError, ssl.SSLError, ValueError) as exc:
                raise errors.KeyUnreachableError(
                    f"cannot reach the KMIP key manager at {self.host}:{self.port}: {exc}"
                ) from None
            try:
                yield client
            except (OSError, ssl.SSLError) as exc:
                raise errors.KeyUnreachableError(f"KMIP key manager {self.host}:{self.port}: {exc}") from None
            finally:
                client.close()

    def _call(self, client: Any, operation: enums.Operation, payload: Any) -> Any:
        request = client.proxy._build_request_message(
            None, [messages.RequestBatchItem(Operation(operation), request_payload=payload)]
        )
        item = client.proxy._send_and_receive_message(request).batch_items[0]
        if item.result_status.value == enums.ResultStatus.SUCCESS:
            return item.response_payload
        reason = item.result_reason.value if item.result_reason else None
        message = item.result_message.value if item.result_message else ""
        raise errors.KeyUnavailableError(
            f"KMIP key {self.key_id} on {self.host}:{self.port} refused {operation.name}: "
            f"{reason.name if reason else 'failure'} - {message}"
        )

    def wrap(self, data_key: bytes, aad: bytes) -> bytes:
        """``data_key`` encrypted by the key manager, bound to ``aad``."""
        nonce = os.urandom(NONCE_BYTES)
        payload = payloads.EncryptRequestPayload(
            unique_identifier=self.key_id,
            data=data_key,
            cryptographic_parameters=_GCM,
            iv_counter_nonce=nonce,
            auth_additional_data=aad,
        )
        with self._client() as client:
            answer = self._call(client, enums.Operation.ENCRYPT, payload)
        return nonce + bytes(answer.data) + bytes(answer.auth_tag)

    def unwrap(self, blob: bytes, aad: bytes) -> bytes:
        """The data key that ``wrap`` made ``blob`` of."""
        nonce, sealed, tag = blob[:NONCE_BYTES], blob[NONCE_BYTES:-TAG_BYTES], blob[-TAG_BYTES:]
        payload = payloads.DecryptRequestPayload(
            unique_identifier=self.key_id,
            data=sealed,
            cryptographic_parameters=_GCM,
            iv_counter_nonce=nonce,
            auth_additional_data=aad,
            auth_tag=tag,
        )
        with self._client() as client:
            try:
                return bytes(self._call(client, enums.Operation.DECRYPT, payload).data)
            except kmip_errors.KmipOperationFailure as exc:
                raise errors.KeyUnavailableError(f"KMIP key {self.key_id} cannot unwrap: {exc}") from None

    def destroy(self) -> str:
        """Revoke then destroy the managed object; returns the key manager's answer when it is asked again."""
        with self._client() as client:
            try:
                client.revoke(enums.RevocationReasonCode.CESSATION_OF_OPERATION, self.key_id)
                client.destroy(self.key_id)
            except kmip_errors.KmipOperationFailure as exc:
                if exc.reason not in _GONE:
                    raise errors.KeyUnavailableError(f"KMIP key {self.key_id}: {exc}") from None
            try:
                client.get(self.key_id)
            except kmip_errors.KmipOperationFailure as exc:
                return f"KMIP Get {self.key_id}: {exc}"
        raise errors.KeyUnavailableError(f"KMIP key {self.key_id} still exists after Destroy")
