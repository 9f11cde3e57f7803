"""The region signing key in a PKCS#11 token (SoftHSM2): acceptance-style documents, audit checkpoints and the
twin's firmware manifest are signed inside the token, verify as Ed25519 like PEM-signed ones, and no private
key is written to disk or can be read out of the token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pkcs11
import pytest

from velyrix import errors
from velyrix.controlplane.audit import checkpoints
from velyrix.controlplane.evidence import firmware
from velyrix.controlplane.reconcile import hsm_signing, signing
from velyrix.testing import hsm


@pytest.fixture
def region_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    softhsm = hsm.shared_softhsm()
    pin_file = tmp_path / "pin"
    pin_file.write_text(hsm.REGION_PIN + "\n")
    monkeypatch.setenv("VELYRIX_SIGNING_PKCS11_MODULE", softhsm.module)
    monkeypatch.setenv("VELYRIX_SIGNING_PKCS11_TOKEN", hsm.REGION_TOKEN)
    monkeypatch.setenv("VELYRIX_SIGNING_PKCS11_PIN_FILE", str(pin_file))
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    monkeypatch.setenv("VELYRIX_FIRMWARE_DIR", str(tmp_path / "firmware"))
    yield tmp_path / "keys"


def _private(label: str) -> Any:
    lib = pkcs11.lib(hsm.shared_softhsm().module)
    session = lib.get_token(token_label=hsm.REGION_TOKEN).open(user_pin=hsm.REGION_PIN)
    return session, session.get_key(label=label, object_class=pkcs11.ObjectClass.PRIVATE_KEY)


def test_documents_are_signed_in_the_token_and_verify_offline(region_token: Path) -> None:
    report = {"cluster": {"id": "clu_x"}, "passed": True}
    signed = signing.sign(report, "us-east-1")
    pinned = signing.public_key_b64("us-east-1")
    assert signed["signature"]["public_key"] == pinned
    assert signing.verify(signed, pinned).valid
    forged = {**signed, "report": {**report, "passed": False}}
    assert not signing.verify(forged, pinned).valid
    assert signing.public_key_b64("us-east-1") == pinned  # the same key on the next use, not a new one
    assert signing.public_key_b64("eu-west-1") != pinned
    assert not list(region_token.parent.rglob("*.pem"))  # no key file anywhere
    session, private = _private("velyrix-us-east-1")
    with session:
        assert private[pkcs11.Attribute.SENSITIVE] and not private[pkcs11.Attribute.EXTRACTABLE]
        with pytest.raises(pkcs11.exceptions.AttributeSensitive):
            private[pkcs11.Attribute.VALUE]


def test_checkpoints_and_the_firmware_manifest_are_signed_by_the_token(region_token: Path) -> None:
    from velyrix.fleet.drivers.sim import SimDriver

    manifest = firmware.publish("us-east-1", {"gpu_vbios": "96.00.A1"}, SimDriver.firmware_image)
    firmware.load("us-east-1")  # verified against the token's public key: accepted
    assert manifest.exists()
    assert checkpoints.public_key() == signing.public_key_b64(checkpoints.KEY_NAME)
    assert hsm_signing.public_raw(checkpoints.KEY_NAME) != hsm_signing.public_raw("us-east-1")
    assert not list(region_token.parent.rglob("*.pem"))
    manifest.write_text(manifest.read_text().replace("96.00.A1", "96.00.A2"))
    with pytest.raises(errors.InvalidInputError, match="refused"):
        firmware.load("us-east-1")


def test_a_missing_pin_file_is_a_clear_error(region_token: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELYRIX_SIGNING_PKCS11_PIN_FILE", str(region_token.parent / "absent"))
    with pytest.raises(errors.InvalidInputError, match="PIN"):
        signing.sign({"a": 1}, "us-east-1")
