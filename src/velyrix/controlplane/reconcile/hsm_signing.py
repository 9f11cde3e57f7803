"""Region signing keys in a PKCS#11 token (``VELYRIX_SIGNING_PKCS11_MODULE``, ``..._TOKEN``, ``..._PIN_FILE``;
tested with SoftHSM2): each is an Ed25519 key pair labelled ``velyrix-<name>``, created in the token on first
use (private half sensitive and never extractable), used through ``CKM_EDDSA``. The signatures are the same
Ed25519 signatures ``velyrix.controlplane.reconcile.signing`` makes from a PEM file, verified the same way.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pkcs11
from pkcs11 import exceptions as p11
from pkcs11.util.ec import encode_named_curve_parameters

from velyrix import errors, settings
from velyrix.controlplane.cmk import pkcs11_backend

ED25519_OID = "1.3.101.112"
LABEL_PREFIX = "velyrix-"
_CREATE = threading.Lock()


def configured() -> bool:
    """Whether the region signing keys live in a PKCS#11 token."""
    return bool(settings.load().signing.pkcs11_module)


def _session() -> Any:
    current = settings.load().signing
    if not current.pkcs11_token or not current.pkcs11_pin_file:
        raise errors.InvalidInputError(
            "VELYRIX_SIGNING_PKCS11_MODULE is set without VELYRIX_SIGNING_PKCS11_TOKEN and _PIN_FILE",
            hint="name the token's label and a file holding its user PIN",
        )
    try:
        pin = Path(current.pkcs11_pin_file).read_text().splitlines()[0].strip()
    except (OSError, IndexError):
        raise errors.InvalidInputError(f"cannot read the signing token's PIN from {current.pkcs11_pin_file}") from None
    return pkcs11_backend.open_session(current.pkcs11_module, current.pkcs11_token, pin, rw=True)


def _find(session: Any, label: str, object_class: pkcs11.ObjectClass) -> Any | None:
    try:
        return session.get_key(label=label, key_type=pkcs11.KeyType.EC_EDWARDS, object_class=object_class)
    except p11.NoSuchKey:
        return None


def _pair(session: Any, label: str) -> tuple[Any, Any]:
    with _CREATE:
        public, private = (
            _find(session, label, pkcs11.ObjectClass.PUBLIC_KEY),
            _find(session, label, pkcs11.ObjectClass.PRIVATE_KEY),
        )
        if public is None or private is None:
            public, private = session.generate_keypair(
                pkcs11.KeyType.EC_EDWARDS,
                mechanism=pkcs11.Mechanism.EC_EDWARDS_KEY_PAIR_GEN,
                store=True,
                label=label,
                public_template={pkcs11.Attribute.EC_PARAMS: encode_named_curve_parameters(ED25519_OID)},
                private_template={pkcs11.Attribute.EXTRACTABLE: False, pkcs11.Attribute.SENSITIVE: True},
            )
    return public, private


def _raw_point(point: bytes) -> bytes:
    """The 32-byte Ed25519 public key from ``CKA_EC_POINT`` (a DER OCTET STRING, or the raw bytes)."""
    if len(point) == 34 and point[0] == 0x04 and point[1] == 32:
        return point[2:]
    if len(point) == 32:
        return point
    raise errors.VelyrixError(f"unexpected CKA_EC_POINT of {len(point)} bytes for an Ed25519 key")


def public_raw(name: str) -> bytes:
    """The raw public key of the signing key ``name`` (created in the token on first use)."""
    with _session() as session:
        public, _private = _pair(session, LABEL_PREFIX + name)
        return _raw_point(bytes(public[pkcs11.Attribute.EC_POINT]))


def sign(name: str, data: bytes) -> tuple[bytes, bytes]:
    """(raw public key, Ed25519 signature of ``data``) by the signing key ``name``, inside the token."""
    with _session() as session:
        public, private = _pair(session, LABEL_PREFIX + name)
        return _raw_point(bytes(public[pkcs11.Attribute.EC_POINT])), bytes(
            private.sign(data, mechanism=pkcs11.Mechanism.EDDSA)
        )
