"""Replicas that share ``VELYRIX_SIGNING_KEY_DIR`` and create a region's key at once (first start, or the audit
key of checkpoints and ``GET /v1/audit-log/key``) all end up signing with the one key stored there
(``reconcile/signing.py`` ``region_key``). The race is made deterministic: a second replica creates the key
while the first one has written its key file and not yet linked it into place."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from velyrix.controlplane.reconcile import signing


def _raw(key: Any) -> bytes:
    return bytes(key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def test_two_replicas_creating_a_region_key_at_once_both_sign_with_the_stored_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = tmp_path / "keys"
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(keys))
    real_link = os.link
    second: list[Any] = []

    def link(source: Any, target: Any) -> None:
        if not second:  # the other replica creates the key between this one's write and its link
            second.append(None)
            second[0] = signing.region_key("us-east-1")
        real_link(source, target)

    monkeypatch.setattr(signing.os, "link", link)
    first = signing.region_key("us-east-1")
    monkeypatch.setattr(signing.os, "link", real_link)
    stored = signing.region_key("us-east-1")  # read from the file now
    assert _raw(first) == _raw(second[0]) == _raw(stored)
    assert sorted(p.name for p in keys.iterdir()) == ["us-east-1.ed25519.pem"]  # no temporary file left
    document = signing.sign({"kind": "test"}, "us-east-1")
    assert signing.verify(document, signing.public_key_b64("us-east-1")).valid
