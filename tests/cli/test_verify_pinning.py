"""``velyrix verify acceptance`` trusts the key the region's control plane publishes, pinned at login like
SSH's known_hosts: a report re-signed with any other key is INVALID, a control plane that changes its key
is refused loudly, and ``--public-key`` still checks offline. A real control plane on loopback (SQLite)."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from velyrix.controlplane.api import create_app
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db import models
from velyrix.controlplane.reconcile import signing
from velyrix.testing.postgres import free_port

REPORT = {"cluster": {"name": "acme", "region": "us-east-1"}, "nodes": [], "passed": True}


@pytest.fixture
def plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """``(url, tenant key)`` of a control plane on loopback; the CLI's home is tmp_path/cli, not logged in."""
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    app = create_app(f"sqlite:///{tmp_path / 'velyrix.db'}")
    with app.state.sessionmaker() as s:
        tenant = models.Tenant(name="acme", display_name="ACME")
        s.add(tenant)
        s.flush()
        key = principals.issue_key(s, tenant_id=tenant.id, name="t", role="owner")[1]
        s.commit()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "cli"))
    monkeypatch.delenv("VELYRIX_ENDPOINT", raising=False)
    monkeypatch.delenv("VELYRIX_API_KEY", raising=False)
    yield f"http://127.0.0.1:{port}", key
    server.should_exit = True
    thread.join(5)


def _resigned(signed: dict[str, Any]) -> dict[str, Any]:
    """The same report signed by a key of someone else's (the signature itself is sound)."""
    other = ed25519.Ed25519PrivateKey.generate()
    raw = other.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    sig = {
        "algorithm": "Ed25519",
        "key_id": signing.key_id(raw),
        "public_key": base64.b64encode(raw).decode(),
        "value": base64.b64encode(other.sign(signing.canonical(signed["report"]))).decode(),
    }
    return {"report": signed["report"], "signature": sig}


def test_a_report_re_signed_with_another_key_is_invalid(plane: tuple[str, str], velyrix: Any, tmp_path: Path) -> None:
    url, key = plane
    login = velyrix("login", "--endpoint", url, "--api-key", key)
    assert login.exit_code == 0, login.stderr
    region_key = signing.public_key_b64("us-east-1")
    assert f"us-east-1 {signing.key_id(base64.b64decode(region_key))} (pinned now)" in login.stdout
    genuine = signing.sign(REPORT, "us-east-1")
    path = tmp_path / "report.json"
    path.write_text(json.dumps(genuine))
    ok = velyrix("verify", "acceptance", str(path))
    assert ok.exit_code == 0 and "valid" in ok.stdout and "pinned for us-east-1" in ok.stdout, ok.stdout
    path.write_text(json.dumps(_resigned(genuine)))
    forged = velyrix("verify", "acceptance", str(path))
    assert forged.exit_code == 1 and "INVALID" in forged.stdout and "another key than the pinned one" in forged.stdout


def test_a_changed_region_key_is_refused_loudly(
    plane: tuple[str, str], velyrix: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, key = plane
    assert velyrix("login", "--endpoint", url, "--api-key", key).exit_code == 0
    pinned = (tmp_path / "cli" / "known_keys.json").read_text()
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "other-keys"))  # the server's key changes
    again = velyrix("login", "--endpoint", url, "--api-key", key)
    assert again.exit_code == 2
    assert "THE ACCEPTANCE SIGNING KEY OF REGION" in again.stderr and "HAS CHANGED" in again.stderr
    assert (tmp_path / "cli" / "known_keys.json").read_text() == pinned  # nothing re-pinned
    path = tmp_path / "report.json"
    path.write_text(json.dumps(signing.sign(REPORT, "us-east-1")))  # signed by the new key
    assert velyrix("verify", "acceptance", str(path)).exit_code == 1


def test_without_login_or_key_a_report_is_not_trusted_and_public_key_works_offline(
    velyrix: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "cli"))
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    monkeypatch.delenv("VELYRIX_ENDPOINT", raising=False)
    monkeypatch.delenv("VELYRIX_API_KEY", raising=False)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(signing.sign(REPORT, "us-east-1")))
    unknown = velyrix("verify", "acceptance", str(path))
    assert unknown.exit_code == 1 and "INVALID" in unknown.stdout and "no key is pinned" in unknown.stdout
    offline = velyrix("verify", "acceptance", str(path), "--public-key", signing.public_key_b64("us-east-1"))
    assert offline.exit_code == 0 and "given with --public-key" in offline.stdout


CERTIFICATE = {
    "kind": "velyrix.sanitization-certificate/v1",
    "region": "us-east-1",
    "cluster": {"id": "cls_1", "name": "acme"},
    "subject": {"kind": "node", "name": "use1-h200-su00-n00"},
    "sanitization": {"method": "purge", "technique": ["nvme-format-crypto-erase"], "tool": "nvme-cli"},
    "verification": {"method": "read-back", "passed": True},
    "performed_by": "velyrix reconciler",
    "performed_at": "2026-12-01T14:00:00Z",
    "certificate_id": "san_1",
}
"""A sanitization certificate's report (the fields ``velyrix verify sanitization`` prints)."""


def test_a_sanitization_certificate_re_signed_with_another_key_is_invalid(
    plane: tuple[str, str], velyrix: Any, tmp_path: Path
) -> None:
    """``verify sanitization`` trusts the region key pinned at login, as ``verify acceptance`` does."""
    from velyrix.controlplane.evidence import sanitization

    assert CERTIFICATE["kind"] == sanitization.KIND
    url, key = plane
    assert velyrix("login", "--endpoint", url, "--api-key", key).exit_code == 0
    genuine = signing.sign(CERTIFICATE, "us-east-1")
    path = tmp_path / "node-use1-h200-su00-n00.json"
    path.write_text(json.dumps(genuine))
    ok = velyrix("verify", "sanitization", str(path))
    assert ok.exit_code == 0 and "valid" in ok.stdout and "pinned for us-east-1" in ok.stdout, ok.stdout
    assert "not pinned" not in ok.stdout
    path.write_text(json.dumps(_resigned(genuine)))
    forged = velyrix("verify", "sanitization", str(path))
    assert forged.exit_code == 1 and "INVALID" in forged.stdout and "another key than the pinned one" in forged.stdout


def test_without_login_or_key_a_certificate_is_not_trusted_and_public_key_works_offline(
    velyrix: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "cli"))
    monkeypatch.setenv("VELYRIX_SIGNING_KEY_DIR", str(tmp_path / "keys"))
    monkeypatch.delenv("VELYRIX_ENDPOINT", raising=False)
    monkeypatch.delenv("VELYRIX_API_KEY", raising=False)
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(signing.sign(CERTIFICATE, "us-east-1")))
    unknown = velyrix("verify", "sanitization", str(path))
    assert unknown.exit_code == 1 and "INVALID" in unknown.stdout and "no key is pinned" in unknown.stdout
    offline = velyrix("verify", "sanitization", str(path), "--public-key", signing.public_key_b64("us-east-1"))
    assert offline.exit_code == 0 and "given with --public-key" in offline.stdout
    bad = velyrix("verify", "sanitization", str(path), "--public-key", "not-a-key")
    assert bad.exit_code == 2 and "not a base64 Ed25519 public key" in bad.stderr
