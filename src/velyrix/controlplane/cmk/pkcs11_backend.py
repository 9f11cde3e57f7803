"""A tenant's key-encryption key in a PKCS#11 token (python-pkcs11; tested with SoftHSM2).

The key is an AES-256 secret key object found by its label; it never leaves the token. Wrapping is
``C_Encrypt`` with ``CKM_AES_GCM`` inside the token (12-byte random nonce, 128-bit tag, the volume's binding
as additional data); a wrapped key is ``nonce + ciphertext + tag`` (60 bytes for a 32-byte data key).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import pkcs11
from pkcs11 import exceptions as p11
from pkcs11.mechanisms import GCMParams

from velyrix.controlplane.cmk import errors

NONCE_BYTES = 12
_LIBS: dict[str, Any] = {}
_LOCK = threading.Lock()


def library(module: str) -> Any:
    """The loaded PKCS#11 module ``module`` (loaded once per process)."""
    with _LOCK:
        if module not in _LIBS:
            try:
                _LIBS[module] = pkcs11.lib(module)
            except (OSError, RuntimeError, p11.PKCS11Error) as exc:
                raise errors.KeyUnreachableError(f"cannot load PKCS#11 module {module}: {exc}") from None
        return _LIBS[module]


def open_session(module: str, token_label: str, pin: str, *, rw: bool = False) -> Any:
    """A logged-in session on the token labelled ``token_label``; ``KeyUnavailableError`` when the token is
    gone or the PIN no longer opens it."""
    lib = library(module)
    try:
        token = lib.get_token(token_label=token_label)
        return token.open(user_pin=pin, rw=rw)
    except p11.NoSuchToken:
        raise errors.KeyUnavailableError(f"no PKCS#11 token labelled '{token_label}'") from None
    except (p11.PinIncorrect, p11.PinLocked, p11.PinExpired) as exc:
        raise errors.KeyUnavailableError(
            f"token '{token_label}' refused the granted PIN ({type(exc).__name__})",
            hint="the tenant changed or locked the PIN: grant again with the current one",
        ) from None
    except p11.PKCS11Error as exc:
        raise errors.KeyUnreachableError(f"token '{token_label}': {type(exc).__name__}") from None


class Pkcs11Key:
    """One AES-256 key object (``key_label``) in one token, used with the tenant's PIN."""

    def __init__(self, module: str, token_label: str, key_label: str, pin: str) -> None:
        self.module, self.token_label, self.key_label, self._pin = module, token_label, key_label, pin

    def _find(self, session: Any) -> Any:
        try:
            return session.get_key(
                label=self.key_label, key_type=pkcs11.KeyType.AES, object_class=pkcs11.ObjectClass.SECRET_KEY
            )
        except p11.NoSuchKey:
            raise errors.KeyUnavailableError(
                f"token '{self.token_label}' holds no AES key labelled '{self.key_label}' (destroyed or renamed)"
            ) from None
        except p11.MultipleObjectsReturned:
            raise errors.KeyInvalidError(f"token '{self.token_label}' holds several keys '{self.key_label}'") from None

    def wrap(self, data_key: bytes, aad: bytes) -> bytes:
        """``data_key`` encrypted inside the token, bound to ``aad``."""
        nonce = os.urandom(NONCE_BYTES)
        with open_session(self.module, self.token_label, self._pin) as session:
            key = self._find(session)
            try:
                sealed = key.encrypt(
                    data_key, mechanism=pkcs11.Mechanism.AES_GCM, mechanism_param=GCMParams(nonce, aad)
                )
            except p11.PKCS11Error as exc:
                raise errors.KeyUnavailableError(
                    f"key '{self.key_label}' refused to encrypt: {type(exc).__name__}"
                ) from None
        return nonce + bytes(sealed)

    def unwrap(self, blob: bytes, aad: bytes) -> bytes:
        """The data key that ``wrap`` made ``blob`` of; ``KeyUnavailableError`` if the key cannot open it."""
        nonce, sealed = blob[:NONCE_BYTES], blob[NONCE_BYTES:]
        with open_session(self.module, self.token_label, self._pin) as session:
            key = self._find(session)
            try:
                return bytes(
                    key.decrypt(sealed, mechanism=pkcs11.Mechanism.AES_GCM, mechanism_param=GCMParams(nonce, aad))
                )
            except p11.PKCS11Error as exc:
                raise errors.KeyUnavailableError(
                    f"key '{self.key_label}' cannot unwrap this data key ({type(exc).__name__}): another key or altered"
                ) from None

    def destroy(self) -> str:
        """Destroy the key object in the token; returns the token's answer when it is looked up again."""
        with open_session(self.module, self.token_label, self._pin, rw=True) as session:
            self._find(session).destroy()
            try:
                self._find(session)
            except errors.KeyUnavailableError as gone:
                return gone.message
        raise errors.KeyUnavailableError(
            f"token '{self.token_label}' still holds '{self.key_label}' after C_DestroyObject"
        )
